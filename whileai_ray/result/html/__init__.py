"""The HTML report (``data.to_html``) and the notebook views: self-contained pages, no CDN.
"""
