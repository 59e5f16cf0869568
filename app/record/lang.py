"""The language ``stepscope`` speaks: chosen per invocation, like other command-line tools.

1. ``--lang en|zh-CN`` anywhere before ``--`` (read before the parser is built, so ``--help``
   and argparse's own errors speak it too);
2. else the locale environment, in POSIX order: the first of ``LC_ALL``, ``LC_MESSAGES``,
   ``LANG`` that is set and not empty; ``zh``, ``zh_CN.UTF-8``, ``zh_TW``… → ``zh-CN``;
3. else English (``C``, ``POSIX``, ``en_US.UTF-8`` and every other locale too).

The words are the site's gettext catalogs (``app/locale``, the same ids the web pages use),
read by :func:`app.catalogs.load_catalog` with the standard library only: this module must
not import the web app (FastAPI, Starlette) just to print a line. A compiled ``.mo`` is read
when it is as new as its ``.po``; otherwise the ``.po`` is compiled in memory (Babel); with
neither the ids (English) are shown.
"""

from __future__ import annotations

import gettext as gettext_module
from collections.abc import Callable, Mapping, Sequence
from functools import cache

from app.catalogs import DEFAULT as DEFAULT
from app.catalogs import DOMAIN as DOMAIN
from app.catalogs import LANGUAGES as LANGUAGES
from app.catalogs import LOCALE_DIR as LOCALE_DIR
from app.catalogs import load_catalog

ENV_VARS = ("LC_ALL", "LC_MESSAGES", "LANG")
OPTION = "--lang"


def normalize(tag: str | None) -> str | None:
    """A supported language for a tag or locale name (``zh_CN.UTF-8`` → ``zh-CN``), if any."""
    if not tag:
        return None
    low = tag.strip().split(".", 1)[0].split("@", 1)[0].replace("_", "-").lower()
    primary = low.split("-", 1)[0]
    if primary == "zh":
        return "zh-CN"  # Traditional Chinese readers get Simplified rather than English
    if primary == "en":
        return "en"
    return None


def from_environment(env: Mapping[str, str]) -> str:
    """The language of the locale environment: the first set variable decides (as in POSIX,
    ``LC_ALL`` overrides ``LC_MESSAGES``, which overrides ``LANG``); unknown locales → English."""
    for var in ENV_VARS:
        value = env.get(var)
        if value:
            return normalize(value) or DEFAULT
    return DEFAULT


def asked(argv: Sequence[str]) -> str | None:
    """The language an explicit ``--lang X`` / ``--lang=X`` (or an abbreviation argparse would
    accept, such as ``--la``) asks for; None when absent or not a supported language."""
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        name, eq, value = arg.partition("=")
        if len(name) < 3 or not OPTION.startswith(name):
            continue
        if not eq:
            value = argv[i + 1] if i + 1 < len(argv) else ""
        return value if value in LANGUAGES else None
    return None


def choose(argv: Sequence[str], env: Mapping[str, str]) -> str:
    """The language of one invocation: ``--lang``, else the environment, else English."""
    return asked(argv) or from_environment(env)


@cache
def translations(lang: str) -> gettext_module.NullTranslations:
    folder = LANGUAGES.get(lang)
    if folder is None:
        return gettext_module.NullTranslations()
    return load_catalog(LOCALE_DIR / folder / "LC_MESSAGES", DOMAIN)


def gettext_for(lang: str) -> Callable[[str], str]:
    return translations(lang).gettext
