//! Shadow DOM against real Chromium: open roots (nested, with slots) are seen by
//! the snapshot, the page text, role and name, `find` and the verdict, with the
//! same ref rules as the document; closed roots are named; framework tooling is
//! left out.

use dshkit_liveloop::preview::{Action, PreviewError, PreviewManager, PreviewSession, Target, Viewport};
use dshkit_liveloop::verify::evidence::EvidenceStore;
use dshkit_liveloop::verify::{Assertion, Step, Verdict, VerifyContext, VerifyRequest, verify};
use dshkit_test::FixtureServer;

use super::{OWNER, click_button, html, manager};

/// Web components of the kinds real apps use:
/// - `counter-card`: an open root whose button re-renders on each click (a new
///   element, as a template library that re-creates it would), as the Lit
///   template's counter;
/// - `outer-box`: an open root with a named slot, a default slot and a nested
///   open root (`inner-box`); its light children come in another order than
///   they are shown, and one is assigned to no slot (so it is not shown);
/// - `secret-box`: a closed root;
/// - `form-card`: an open root with a labelled field whose input it mirrors;
/// - a button "Same" in the document and another in `same-card`'s open root.
const COMPONENTS: &str = r#"
<h1>Shadow fixture</h1>
<counter-card></counter-card>
<outer-box>
  <button onclick="document.getElementById('light').textContent = 'light clicked'">Light button</button>
  <span slot="title">Slotted title</span>
  <em slot="nowhere">Unslotted words</em>
</outer-box>
<p id="light"></p>
<secret-box id="vault"></secret-box>
<button>Same</button>
<same-card></same-card>
<form-card></form-card>
<script>
const define = (name, mode, html, setup) => customElements.define(name, class extends HTMLElement {
  constructor() {
    super();
    const root = this.attachShadow({ mode });
    root.innerHTML = html;
    if (setup) setup(root);
  }
});
define("counter-card", "open", "<p>Counter</p><span id=slot></span>", (root) => {
  let count = 0;
  const render = () => {
    const button = document.createElement("button");
    button.textContent = "count is " + count;
    button.onclick = () => { count++; render(); };
    root.getElementById("slot").replaceChildren(button);
  };
  render();
});
define("outer-box", "open", "<h2><slot name=title></slot></h2><inner-box></inner-box><slot></slot>");
define("inner-box", "open", "<p>Nested text</p><button>Nested button</button>");
define("secret-box", "closed", "<p>closed secret</p><button>Hidden</button>");
define("same-card", "open", "<button>Same</button>");
define("form-card", "open", "<label>Email <input></label><output></output>", (root) => {
  const input = root.querySelector("input");
  input.addEventListener("input", () => { root.querySelector("output").textContent = "hello " + input.value; });
});
</script>
"#;

fn role_name(role: &str, name: &str) -> Target {
    Target::RoleName {
        role: role.into(),
        name: name.into(),
    }
}

async fn open_components() -> (FixtureServer, PreviewManager, std::sync::Arc<PreviewSession>) {
    let server = FixtureServer::start(vec![("/", html(COMPONENTS))]);
    let manager = manager();
    let session = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    (server, manager, session)
}

#[tokio::test]
async fn open_shadow_roots_nested_and_slotted_are_in_the_outline_and_text_as_shown() {
    let (_server, _manager, session) = open_components().await;
    let snapshot = session.snapshot().await.unwrap();
    let outline = snapshot.outline();
    for line in [
        "button \"count is 0\" [ref=",
        "heading \"Slotted title\" [level=2]",
        "button \"Nested button\" [ref=",
        "button \"Light button\" [ref=",
        "textbox \"Email\" [ref=",
    ] {
        assert!(outline.contains(line), "{line:?} in\n{outline}");
    }
    // Slotted content is where its slot shows it: the title (last but one in
    // the light DOM) before the nested root, the default slot's button after.
    let at = |needle: &str| {
        outline
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} in\n{outline}"))
    };
    assert!(at("Slotted title") < at("Nested button") && at("Nested button") < at("Light button"));
    let text = &snapshot.text;
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} in {text:?}"))
    };
    assert!(at("Counter") < at("count is 0"));
    assert!(at("Slotted title") < at("Nested text") && at("Nested text") < at("Light button"));
    // A light child assigned to no slot is not shown, so it is not text.
    assert!(!text.contains("Unslotted words"), "{text:?}");
    assert!(
        !snapshot.warnings.iter().any(|w| w.contains("shadow DOM")),
        "{:?}",
        snapshot.warnings
    );
}

#[tokio::test]
async fn a_closed_root_is_named_in_a_warning_and_none_of_it_is_read() {
    let (_server, _manager, session) = open_components().await;
    let snapshot = session.snapshot().await.unwrap();
    assert_eq!(
        snapshot
            .warnings
            .iter()
            .filter(|w| w.contains("closed shadow root"))
            .collect::<Vec<_>>()
            .len(),
        1,
        "{:?}",
        snapshot.warnings
    );
    let warning = snapshot.warnings.iter().find(|w| w.contains("closed")).unwrap();
    assert!(warning.contains("<secret-box#vault>"), "{warning}");
    assert!(!snapshot.text.contains("closed secret"), "{:?}", snapshot.text);
    assert!(snapshot.find("button", "Hidden").is_empty());
}

#[tokio::test]
async fn shadow_elements_are_clicked_and_filled_with_the_documents_ref_rules() {
    let (_server, _manager, session) = open_components().await;
    let first = session.snapshot().await.unwrap();
    let count = first.find("button", "count is 0")[0].reference.clone().unwrap();

    // By ref: the click lands on the shadow button (its coordinates).
    let clicked = session
        .interact(Action::Click(Target::Ref(count.clone())))
        .await
        .unwrap();
    assert!(clicked.text.contains("count is 1"), "{}", clicked.text);
    // The button was re-rendered: the old ref is refused, as in the document.
    let stale = session
        .interact(Action::Click(Target::Ref(count)))
        .await
        .unwrap_err();
    assert_eq!(stale.code(), "STALE_ELEMENT_REF", "{stale}");
    // Within one generation too: the ref of a replaced shadow element is gone.
    let current = session.snapshot().await.unwrap();
    let one = current.find("button", "count is 1")[0].reference.clone().unwrap();
    session.interact(click_button("count is 1")).await.unwrap();
    let detached = session
        .interact(Action::Click(Target::Ref(one)))
        .await
        .unwrap_err();
    assert_eq!(detached.code(), "STALE_ELEMENT_REF", "{detached}");

    // By role and name, into a nested root and through a slot.
    session.interact(click_button("Nested button")).await.unwrap();
    let light = session.interact(click_button("Light button")).await.unwrap();
    assert!(light.text.contains("light clicked"), "{}", light.text);

    // A name in the document and in a root is ambiguous, and both refs are named.
    let ambiguous = session.interact(click_button("Same")).await.unwrap_err();
    assert!(
        matches!(&ambiguous, PreviewError::AmbiguousElement { count: 2, refs, .. } if refs.split(", ").count() == 2),
        "{ambiguous}"
    );

    // A fill focuses the field inside the root and types into it.
    let filled = session
        .interact(Action::Fill(role_name("textbox", "Email"), "ada".into()))
        .await
        .unwrap();
    assert!(
        filled.outline().contains("textbox \"Email\""),
        "{}",
        filled.outline()
    );
    assert!(
        filled.outline().contains("value=\"ada\" (focused)"),
        "{}",
        filled.outline()
    );
    assert!(filled.text.contains("hello ada"), "{}", filled.text);

    // A wait and a search see shadow text and nodes.
    session
        .interact(Action::WaitFor {
            text: Some("hello ada".into()),
            url: None,
            timeout: std::time::Duration::from_secs(5),
        })
        .await
        .unwrap();
    let last = session.last_snapshot().await.unwrap();
    let (found, total) = last.search(Some("nested"), Some("button"));
    assert_eq!((found.len(), total), (1, 1), "{found:?}");
}

fn context(workspace: &std::path::Path) -> VerifyContext {
    VerifyContext {
        evidence: EvidenceStore::new(workspace.join("evidence")),
        workspace: workspace.to_owned(),
        source_dir: None,
        runtime: None,
        progress: dshkit_liveloop::progress::Progress::default(),
    }
}

fn click_step(name: &str) -> Step {
    Step {
        action: "click".into(),
        role: Some("button".into()),
        name: Some(name.into()),
        ..Step::default()
    }
}

/// The Lit template's shape: the whole app in one open root of a custom element.
const LIT_LIKE: &str = r#"
<my-element></my-element>
<script>
customElements.define("my-element", class extends HTMLElement {
  constructor() {
    super();
    this.count = 0;
    this.attachShadow({ mode: "open" });
    this.render();
  }
  render() {
    this.shadowRoot.innerHTML = `<h1>Vite + Lit</h1><div class="card"><button part="button">count is ${this.count}</button></div><p class="read-the-docs">Click on the Vite and Lit logos to learn more</p>`;
    this.shadowRoot.querySelector("button").onclick = () => { this.count++; this.render(); };
  }
});
</script>
"#;

#[tokio::test]
async fn a_counter_in_a_shadow_root_is_clicked_and_verified_by_its_text_without_warnings() {
    let workspace = tempfile::tempdir().unwrap();
    let server = FixtureServer::start(vec![("/", html(LIT_LIKE))]);
    let previews = manager();
    let session = previews
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let request = VerifyRequest {
        steps: vec![click_step("count is 0"), click_step("count is 1")],
        assertions: vec![
            Assertion::TextPresent {
                text: "count is 2".into(),
            },
            Assertion::TextAbsent {
                text: "count is 1".into(),
            },
            Assertion::Element {
                role: "heading".into(),
                name: "Vite + Lit".into(),
            },
        ],
        ..VerifyRequest::default()
    };
    let report = verify(&session, &request, &context(workspace.path()))
        .await
        .unwrap();
    assert_eq!(report.judgement.verdict, Verdict::Verified, "{report:#?}");
    // Text the page does not show is still absent: no pass about something else.
    let missing = verify(
        &session,
        &VerifyRequest {
            assertions: vec![Assertion::TextPresent {
                text: "count is 7".into(),
            }],
            ..VerifyRequest::default()
        },
        &context(workspace.path()),
    )
    .await
    .unwrap();
    assert_eq!(missing.judgement.verdict, Verdict::Failed, "{missing:#?}");
}

/// Astro's dev toolbar as `astro dev` adds it to every page: a custom element
/// shown as `display: contents` with an open root of its own (a fixed bar of
/// buttons and text), and inside it a closed root.
const ASTRO_TOOLBAR: &str = r#"
<main><h1>Welcome to Astro</h1></main>
<astro-dev-toolbar></astro-dev-toolbar>
<script>
customElements.define("astro-dev-toolbar", class extends HTMLElement {
  constructor() {
    super();
    const root = this.attachShadow({ mode: "open" });
    root.innerHTML = '<style>:host { all: initial; display: contents; }</style>'
      + '<div id="dev-toolbar-root" style="position:fixed;bottom:0;left:40%"><button>Menu</button><span>Toolbar text</span><toolbar-window></toolbar-window></div>';
  }
});
customElements.define("toolbar-window", class extends HTMLElement {
  constructor() { super(); this.attachShadow({ mode: "closed" }).innerHTML = "<p>window</p>"; }
});
</script>
"#;

#[tokio::test]
async fn astros_dev_toolbar_is_left_out_of_the_outline_text_and_warnings() {
    let workspace = tempfile::tempdir().unwrap();
    let server = FixtureServer::start(vec![("/", html(ASTRO_TOOLBAR))]);
    let previews = manager();
    let session = previews
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let snapshot = session.snapshot().await.unwrap();
    assert!(snapshot.warnings.is_empty(), "{:?}", snapshot.warnings);
    assert!(
        snapshot.find("button", "Menu").is_empty(),
        "{}",
        snapshot.outline()
    );
    assert!(!snapshot.text.contains("Toolbar text"), "{:?}", snapshot.text);
    let report = verify(
        &session,
        &VerifyRequest {
            assertions: vec![Assertion::TextPresent {
                text: "Welcome to Astro".into(),
            }],
            ..VerifyRequest::default()
        },
        &context(workspace.path()),
    )
    .await
    .unwrap();
    assert_eq!(report.judgement.verdict, Verdict::Verified, "{report:#?}");
}
