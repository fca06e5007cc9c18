"""A person at DSH's web UI, in the system Chromium (Playwright): the steps every
walk in this directory shares. Its bounds are generous for a loaded machine;
none of them is a measure of speed."""

# How long the UI may take to show what a step waits for.
UI_MS = 90_000


def launch(playwright, chromium):
    """The system Chromium, headless; never a browser Playwright downloads."""
    return playwright.chromium.launch(
        executable_path=chromium,
        args=["--no-sandbox", "--disable-background-networking", "--disable-component-update"],
    )


def open_dsh(context, dsh_url):
    """A tab on DSH's web UI with a workspace open, ready for a prompt. DSH's
    welcome notice opens whenever its settings arrive: it is acknowledged."""
    page = context.new_page()
    page.set_default_timeout(UI_MS)
    notice = page.get_by_role("dialog", name="Internal Testing Notice")
    page.add_locator_handler(notice, lambda: notice.get_by_role("button", name="Continue").click())
    page.goto(f"{dsh_url}/")
    prompt = page.get_by_role("textbox", name="Describe what you want to build")
    choose = page.get_by_role("button", name="Choose workspace")
    prompt.or_(choose).first.wait_for()
    if not prompt.is_visible():
        choose.click()
        page.get_by_role("button", name="Open").click()
    return page


def ask(page, text):
    """Sends `text` as the person's message."""
    prompt = page.get_by_role("textbox", name="Describe what you want to build")
    prompt.fill(text)
    prompt.press("Enter")
