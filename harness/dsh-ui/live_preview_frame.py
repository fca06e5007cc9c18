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

import dsh_person

# How long the app's answer may take (a loaded machine).
ANSWER_MS = 30_000


def main() -> None:
    dsh_url, chromium, screenshots = sys.argv[1], sys.argv[2], sys.argv[3]
    with sync_playwright() as playwright:
        browser = dsh_person.launch(playwright, chromium)
        try:
            page = dsh_person.open_dsh(browser.new_context(viewport={"width": 1400, "height": 900}), dsh_url)
            console = []
            page.on("console", lambda message: console.append(message.text))
            dsh_person.ask(page, "Verify the app.")
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
