"""Reading a gettext catalog folder, for the web app (:mod:`app.web.i18n`) and the recorder's
command line (:mod:`app.record.lang`) alike, with the standard library only (Babel only to
compile a ``.po`` whose ``.mo`` is missing or stale)."""

from __future__ import annotations

import gettext as gettext_module
import io
from pathlib import Path

LOCALE_DIR = Path(__file__).resolve().parent / "locale"
DOMAIN = "messages"
DEFAULT = "en"
# Language tag (what URLs, cookies, <html lang> and the recorder's --lang say) → gettext locale
# directory.
LANGUAGES: dict[str, str] = {"en": "en", "zh-CN": "zh_CN"}


def load_catalog(base: Path, domain: str = DOMAIN) -> gettext_module.NullTranslations:
    """The catalog in ``base`` (a ``LC_MESSAGES`` folder): its .mo when it is as new as the
    .po, else the .po compiled in memory; an empty catalog when there is neither."""
    mo, po = base / f"{domain}.mo", base / f"{domain}.po"
    if mo.is_file() and (not po.is_file() or mo.stat().st_mtime >= po.stat().st_mtime):
        with mo.open("rb") as fp:
            return gettext_module.GNUTranslations(fp)
    if po.is_file():
        from babel.messages.mofile import write_mo  # only when the .mo is missing or stale
        from babel.messages.pofile import read_po

        with po.open("rb") as fp:
            catalog = read_po(fp)
        buf = io.BytesIO()
        write_mo(buf, catalog)
        buf.seek(0)
        return gettext_module.GNUTranslations(buf)
    return gettext_module.NullTranslations()
