"""Drives DSH's web UI as a person does, in the system Chromium, through the
Live Preview's buttons after the agent verified an app this script serves:

- Open in browser and Copy URL give exactly the verified URL (path and query);
- Reload reloads the live page (the app counts its loads in its title) and
  shows a fresh screenshot of it;
- with the app stopped, Reload fails, and its error stays through the view's
  refreshes until the person dismisses it.

Prints one JSON line of what it saw; keeps screenshots in SCREENSHOT_DIR.

usage: live_preview_buttons.py DSH_URL CHROMIUM SCREENSHOT_DIR APP_PORT APP_PATH
"""

import http.server
import json
import re
import sys
import threading

from playwright.sync_api import sync_playwright

import dsh_person

# The app: its title counts the page's loads in this browser (localStorage), so
# a reload that really happened shows a higher count.
APP = b"""<!doctype html><html><head><title>Visit</title></head><body><h1>Shop</h1>
<script>const n = Number(localStorage.getItem('visits') || 0) + 1;
localStorage.setItem('visits', String(n)); document.title = 'Visit ' + n;</script></body></html>"""


class App(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (the standard library's name)
        body = APP if self.path.split("?")[0] == APP_PATH.split("?")[0] else b"not here"
        self.send_response(200 if body is APP else 404)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def serve(port):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), App)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def visits(text):
    found = re.search(r"Visit (\d+)", text)
    return int(found.group(1)) if found else None


def main() -> None:
    global APP_PATH
    dsh_url, chromium, screenshots, port, APP_PATH = sys.argv[1:6]
    app_url = f"http://127.0.0.1:{port}{APP_PATH}"
    app = serve(int(port))
    seen = {"appUrl": app_url}
    with sync_playwright() as playwright:
        browser = dsh_person.launch(playwright, chromium)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            context.grant_permissions(["clipboard-read", "clipboard-write"], origin=dsh_url)
            page = dsh_person.open_dsh(context, dsh_url)
            dsh_person.ask(page, "Verify the app.")
            page.get_by_text("every criterion held").first.wait_for()
            page.get_by_role("tab", name="Live Preview").click()
            view = page.locator("[data-dshkit=live-preview]")
            view.get_by_text("Latest verdict:").wait_for()

            # Open in browser: a new tab at exactly the verified URL.
            link = view.get_by_role("link", name="Open in browser")
            seen["openHref"] = link.get_attribute("href")
            seen["openRel"] = link.get_attribute("rel")
            with context.expect_page() as opened:
                link.click()
            tab = opened.value
            tab.wait_for_load_state()
            seen["openedUrl"] = tab.url
            tab.close()

            # Copy URL: the clipboard holds exactly the verified URL.
            view.get_by_role("button", name="Copy URL").click()
            view.get_by_text("Copied").wait_for()
            seen["copied"] = page.evaluate("navigator.clipboard.readText()")
            seen["urlField"] = view.locator("[data-dshkit=url]").inner_text()

            # Reload, twice: each shows the page as it is now (one more load).
            reloaded = view.locator("[data-dshkit=reloaded]")
            view.get_by_role("button", name="Reload").click()
            reloaded.wait_for()
            first = visits(reloaded.inner_text())
            view.get_by_role("button", name="Reload").click()
            reloaded.filter(has_text=f"Visit {(first or 0) + 1}").wait_for()
            seen["reloads"] = [first, visits(reloaded.inner_text())]
            live = view.locator("img[data-dshkit=image-live]")
            live.wait_for()
            seen["liveImageWidth"] = live.evaluate("(img) => img.complete ? img.naturalWidth : 0")
            page.screenshot(path=f"{screenshots}/live-preview-reloaded.png")

            # The app stops: Reload fails, and the failure stays through refreshes.
            app.shutdown()
            app.server_close()
            view.get_by_role("button", name="Reload").click()
            error = view.locator("[data-dshkit=error-reload]")
            error.wait_for()
            refreshes = int(view.get_attribute("data-refreshes"))
            page.wait_for_function(
                f"document.querySelector('[data-dshkit=live-preview]')?.dataset.refreshes >= {refreshes + 2}"
            )
            seen["errorAfterRefreshes"] = error.inner_text() if error.is_visible() else None
            page.screenshot(path=f"{screenshots}/live-preview-reload-failed.png")
            view.get_by_role("button", name="Dismiss the Reload error").click()
            error.wait_for(state="detached")
            seen["errorDismissed"] = True
        finally:
            browser.close()
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
