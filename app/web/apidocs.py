"""``/docs``: Swagger UI from the npm package swagger-ui-dist, served locally (no CDN).

FastAPI's own ``/docs`` page loads Swagger UI from a CDN and starts it with an inline script;
both break under the Content-Security-Policy (``script-src 'self'``). This page loads the same
UI from ``/vendor/swagger-ui-dist`` and starts it from ``/docs/init.js``.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

from app.settings import Settings

ASSETS = "/vendor/swagger-ui-dist"
DOCS_HTML = f"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Stepscope API</title>
  <link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
  <link rel="stylesheet" href="{ASSETS}/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="{ASSETS}/swagger-ui-bundle.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>
"""
INIT_JS = """window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
  layout: "BaseLayout",
});
"""


def install(app: FastAPI, settings: Settings) -> None:
    """Serve ``/docs`` and its assets; build the app with ``docs_url=None`` so FastAPI's is off."""
    app.mount(
        ASSETS,
        StaticFiles(directory=str(settings.node_modules / "swagger-ui-dist"), check_dir=False),
        name="vendor-swagger-ui-dist",
    )

    @app.get("/docs", response_class=HTMLResponse, include_in_schema=False)
    def docs() -> HTMLResponse:
        return HTMLResponse(DOCS_HTML)

    @app.get("/docs/init.js", include_in_schema=False)
    def docs_init() -> Response:
        return Response(
            INIT_JS,
            media_type="text/javascript",
            headers={"Cache-Control": "public, max-age=3600"},
        )
