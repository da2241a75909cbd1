"""What a self-contained page embeds safely: JSON inside a ``<script>`` block, and the hash its CSP allows a
script by. Shared by the report page, its viewer's side files and the human-study page.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from markupsafe import Markup

_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "/": "\\/", "\u2028": "\\u2028", "\u2029": "\\u2029"}
#: "/" first: its escape is the only one that holds one of these characters (no later pass touches it)
_JSON_ORDER = ("/", "<", ">", "&", "\u2028", "\u2029")


def script_json(obj: Any) -> Markup:
    """JSON that is safe between ``<script type="application/json">`` tags: no '<', '>', '&' or '/' survives."""
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for ch in _JSON_ORDER:  # str.replace is a C pass per character; "/" first: no escape holds another's
        if ch in text:
            text = text.replace(ch, _JSON_ESCAPES[ch])
    return Markup(text)


def csp_hash(text: str) -> str:
    """The Content-Security-Policy source that allows exactly this inline script: ``'sha256-...'``."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"
