"""The reader's language: which one a request gets, and its gettext catalog.

Stepscope speaks English (``en``, the catalog ids themselves) and Simplified Chinese
(``zh-CN``). :class:`LanguageMiddleware` (pure ASGI) picks one per request:

1. ``?lang=en|zh-CN`` on any URL (then remembered in the ``stepscope_lang`` cookie);
2. else that cookie;
3. else the best match in ``Accept-Language`` (``zh``, ``zh-CN``, ``zh-Hans``… → ``zh-CN``);
4. else English.

The choice is kept in ``scope["state"]["lang"]`` and in a context variable, so a route, the
error handlers and the templates all find the request's translator with :func:`current`.
Catalogs are standard gettext: ``app/locale/<locale>/LC_MESSAGES/messages.po``, compiled to
``.mo`` by ``scripts/_bootstrap.sh`` (``pybabel compile -d app/locale``); a checkout without the
compiled file compiles the ``.po`` in memory instead. An explainer may ship its own catalog
(``WebView.locale``: a folder of ``<locale>/LC_MESSAGES/messages.po``), registered with
:func:`add_catalog`: the site's catalog answers first and each plugin catalog is its fallback,
so a new explainer's words need no edit of the shared files.
"""

from __future__ import annotations

import gettext as gettext_module
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

from starlette.types import Message as AsgiMessage
from starlette.types import Receive, Scope, Send

from app.catalogs import DEFAULT as DEFAULT
from app.catalogs import DOMAIN as DOMAIN
from app.catalogs import LANGUAGES as LANGUAGES
from app.catalogs import LOCALE_DIR as LOCALE_DIR
from app.catalogs import load_catalog
from app.sim.core import Message
from app.sim.core.i18n import reader_gettext
from app.web.asgi import HttpMiddleware

# What the language switch shows: each language in its own words.
NAMES: dict[str, str] = {"en": "English", "zh-CN": "中文"}
COOKIE = "stepscope_lang"
COOKIE_MAX_AGE = 365 * 24 * 3600
QUERY = "lang"

_current: ContextVar[str] = ContextVar("stepscope_lang", default=DEFAULT)


def normalize(tag: str | None) -> str | None:
    """A supported language for a tag a user or browser sent (``zh-hans-cn`` → ``zh-CN``)."""
    if not tag:
        return None
    low = tag.strip().replace("_", "-").lower()
    for lang in LANGUAGES:
        if low == lang.lower():
            return lang
    primary = low.split("-", 1)[0]
    if primary == "zh":
        # Traditional Chinese readers get Simplified rather than English (no zh-TW catalog).
        return "zh-CN"
    if primary == "en":
        return "en"
    return None


def from_accept_language(header: str | None) -> str | None:
    """The supported language a browser prefers most (``q`` weights honoured), if any."""
    if not header:
        return None
    choices: list[tuple[float, int, str]] = []
    for i, part in enumerate(header.split(",")[:32]):
        tag, _, rest = part.strip().partition(";")
        q = 1.0
        for param in rest.split(";"):
            key, _, value = param.strip().partition("=")
            if key.strip() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        lang = normalize(tag)
        if lang and q > 0:
            choices.append((-q, i, lang))
    return min(choices)[2] if choices else None


@dataclass(frozen=True, slots=True)
class Choice:
    lang: str
    remember: bool  # came from ?lang= and differs from the cookie: set the cookie


def choose(query: str, cookies: Mapping[str, str], accept_language: str | None) -> Choice:
    """The language of a request from its query string, cookies and Accept-Language."""
    asked = None
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key == QUERY:
            asked = normalize(value)
    remembered = normalize(cookies.get(COOKIE))
    if asked:
        return Choice(asked, asked != remembered)
    if remembered:
        return Choice(remembered, False)
    return Choice(from_accept_language(accept_language) or DEFAULT, False)


def parse_cookies(header: str) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except Exception:  # a malformed Cookie header must not fail the request
        return {}
    return {k: m.value for k, m in jar.items()}


class LanguageMiddleware(HttpMiddleware):
    """Resolve the language once per HTTP request; remember an explicit ``?lang=``."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        choice = choose(
            scope.get("query_string", b"").decode("latin-1"),
            parse_cookies(headers.get("cookie", "")),
            headers.get("accept-language"),
        )
        scope.setdefault("state", {})["lang"] = choice.lang

        async def send_with_cookie(message: AsgiMessage) -> None:
            if message["type"] == "http.response.start" and choice.remember:
                cookie = f"{COOKIE}={choice.lang}; Path=/; Max-Age={COOKIE_MAX_AGE}; SameSite=Lax"
                message = {
                    **message,
                    "headers": [*message.get("headers", []), (b"set-cookie", cookie.encode())],
                }
            await send(message)

        token = _current.set(choice.lang)
        reader = reader_gettext.set(gettext_for(choice.lang))
        try:
            await self.app(scope, receive, send_with_cookie)
        finally:
            reader_gettext.reset(reader)
            _current.reset(token)


# --- catalogs ------------------------------------------------------------------------------


# Plugin catalogs (folders like LOCALE_DIR), consulted after the site's own, in this order.
_plugin_catalogs: list[Path] = []


def add_catalog(folder: Path) -> None:
    """Use ``folder/<locale>/LC_MESSAGES/messages.(mo|po)`` for ids the site's catalog lacks
    (an explainer's own words). Adding a folder twice is harmless."""
    folder = Path(folder).resolve()
    if folder not in _plugin_catalogs:
        _plugin_catalogs.append(folder)
        translations.cache_clear()


@cache
def translations(lang: str) -> gettext_module.NullTranslations:
    """The compiled catalog of ``lang`` (English: the ids themselves, through its catalog),
    falling back to each registered plugin catalog for ids it does not have."""
    folder = LANGUAGES.get(lang)
    if folder is None:
        return gettext_module.NullTranslations()
    catalog = load_catalog(LOCALE_DIR / folder / "LC_MESSAGES", DOMAIN)
    for extra in _plugin_catalogs:
        catalog.add_fallback(load_catalog(extra / folder / "LC_MESSAGES", DOMAIN))
    return catalog


def current() -> str:
    """The language of the request being handled (English outside a request)."""
    return _current.get()


def language_of(scope_or_request: object) -> str:
    """The language stored on a request (``request.state.lang``), else the current one."""
    state = getattr(scope_or_request, "state", None)
    lang = getattr(state, "lang", None)
    return lang if isinstance(lang, str) and lang in LANGUAGES else current()


def gettext_for(lang: str | None = None) -> Callable[[str], str]:
    """``gettext`` of ``lang`` (default: the current request's language)."""
    return translations(lang or current()).gettext


def render(message: Message | str, lang: str | None = None) -> str:
    """A message (or a plain string, unchanged) in ``lang`` / the request's language."""
    if isinstance(message, Message):
        return message.render(gettext_for(lang))
    return message


def use(lang: str) -> object:
    """Make ``lang`` current (outside the middleware: exports, tests); reset with ``reset``."""
    return _current.set(lang if lang in LANGUAGES else DEFAULT)


def reset(token: object) -> None:
    _current.reset(token)  # type: ignore[arg-type]


@contextmanager
def speaking(lang: str) -> Iterator[None]:
    """``lang`` current for the block (:func:`use`, then :func:`reset`)."""
    token = use(lang)
    try:
        yield
    finally:
        reset(token)


SWITCH_QUERY_MAX = 2000  # characters of a query the switch links repeat


def switch_links(query: str, current_lang: str) -> list[dict[str, object]]:
    """One link per language to this same page: a relative ``?query`` (so the path is kept
    without being echoed into the page) with ``lang`` replaced. theme.js rebuilds it from the
    address bar on click, so a step the player moved to is kept too."""
    pairs = parse_qsl(query, keep_blank_values=True) if len(query) <= SWITCH_QUERY_MAX else []
    kept = [(k, v) for k, v in pairs if k != QUERY]
    return [
        {
            "lang": lang,
            "name": name,
            "href": "?" + urlencode([*kept, (QUERY, lang)]),
            "current": lang == current_lang,
        }
        for lang, name in NAMES.items()
    ]
