"""Drives DSH's web UI as a person does, in the system Chromium, to the Live
Preview of a verified app, and clicks the app's button that tries to navigate
DSH's own tab away (`top.location`). Prints one JSON line: the frame's sandbox,
what the app's script saw, DSH's URL before and after, and the console lines
Chromium wrote about the attempt.

usage: live_preview_frame.py DSH_URL CHROMIUM SCREENSHOT_DIR
"""

import json
import sys

from playwright.sync_api import sync_playwright

# Generous bounds for a loaded machine; none of them is a measure of speed.
UI_MS = 90_000
ANSWER_MS = 30_000


def main() -> None:
    dsh_url, chromium, screenshots = sys.argv[1], sys.argv[2], sys.argv[3]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium,
            args=["--no-sandbox", "--disable-background-networking", "--disable-component-update"],
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            console = []
            page.on("console", lambda message: console.append(message.text))
            page.set_default_timeout(UI_MS)
            # DSH's welcome notice opens whenever its settings arrive: acknowledge it.
            notice = page.get_by_role("dialog", name="Internal Testing Notice")
            page.add_locator_handler(notice, lambda: notice.get_by_role("button", name="Continue").click())
            page.goto(f"{dsh_url}/")
            prompt = page.get_by_role("textbox", name="Describe what you want to build")
            choose = page.get_by_role("button", name="Choose workspace")
            prompt.or_(choose).first.wait_for()
            if not prompt.is_visible():
                choose.click()
                page.get_by_role("button", name="Open").click()
            prompt.fill("Verify the app.")
            prompt.press("Enter")
            page.get_by_text("every criterion held").first.wait_for()
            page.get_by_role("tab", name="Live Preview").click()
            frame_element = page.locator("iframe[data-dshkit=frame]")
            frame_element.wait_for()
            frame = page.frame_locator("iframe[data-dshkit=frame]")
            leave = frame.get_by_role("button", name="Leave DSH")
            leave.wait_for()
            page.screenshot(path=f"{screenshots}/live-preview-framed.png")
            before = page.url
            leave.click()
            outcome = frame.locator("#outcome")
            outcome.filter(has_text="navigation").wait_for(timeout=ANSWER_MS)
            print(
                json.dumps(
                    {
                        "sandbox": frame_element.get_attribute("sandbox"),
                        "outcome": outcome.inner_text(),
                        "before": before,
                        "after": page.url,
                        "console": [line for line in console if "navigation" in line],
                    }
                )
            )
            page.screenshot(path=f"{screenshots}/live-preview-after-escape.png")
        finally:
            browser.close()


if __name__ == "__main__":
    main()
