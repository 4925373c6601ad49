"""Sphinx extension: keep every page of the book loadable with no network.

sphinx-thebe (always loaded by Jupyter Book 1) puts the address of its CDN bundle into every page,
for a "live code" button this book does not use (launch buttons are off). This drops its scripts,
and warns about any other script or stylesheet that would come from another host.
"""

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)


def _is_thebe(asset) -> bool:
    body = asset.attributes.get("body", "") if hasattr(asset, "attributes") else ""
    return "sphinx-thebe" in str(asset.filename or "") or "THEBE_JS_URL" in body


def _offline_assets(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    for key in ("script_files", "css_files"):
        assets = [a for a in context.get(key, []) if not _is_thebe(a)]
        for asset in assets:
            if "://" in str(asset.filename or ""):
                logger.warning("page %s loads %s from the network", pagename, asset.filename)
        context[key] = assets


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", _offline_assets, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
