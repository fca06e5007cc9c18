//! The loader classes: each way Node's loader refuses a plugin (in ESM and
//! CommonJS, nested `lib/` and `package.json` scopes, `exports` maps and
//! conditions), with healthy variants. `plugins/p` is linked and inserted as the
//! profile's layout wants it.

use super::{Case, Link};

pub(super) const ESM_PLUGIN: &str = "export const name = 'p';\nexport function apply() {}\n";
const CJS_PLUGIN: &str = "module.exports = { name: 'p', apply() {} };\n";

pub(super) fn esm(name: &'static str, files: &[(&'static str, &'static str)]) -> Case {
    Case {
        name,
        manifest: serde_json::json!({ "type": "module", "main": "index.js" }),
        files: files.to_vec(),
        link: Link::ToPlugin,
        others: Vec::new(),
        patch: None,
        bundle_listed: false,
        says: None,
    }
}

fn cjs(name: &'static str, files: &[(&'static str, &'static str)]) -> Case {
    Case {
        manifest: serde_json::json!({ "type": "commonjs", "main": "index.js" }),
        ..esm(name, files)
    }
}

pub(super) fn with(mut case: Case, manifest: serde_json::Value) -> Case {
    case.manifest = manifest;
    case
}

#[expect(clippy::too_many_lines, reason = "the corpus: one tree per entry")]
pub(super) fn cases() -> Vec<Case> {
    let no_type = serde_json::json!({ "main": "index.js" });
    vec![
        // Healthy plugins of every kind.
        esm("esm-healthy", &[("index.js", ESM_PLUGIN)]),
        cjs("cjs-healthy", &[("index.js", CJS_PLUGIN)]),
        with(esm("detected-esm", &[("index.js", ESM_PLUGIN)]), no_type.clone()),
        with(cjs("detected-cjs", &[("index.js", CJS_PLUGIN)]), no_type.clone()),
        esm(
            "esm-tla",
            &[(
                "index.js",
                "await Promise.resolve();\nexport const name = 'p';\nexport function apply() {}\n",
            )],
        ),
        with(
            esm(
                "detected-tla",
                &[(
                    "index.js",
                    "const ready = await Promise.resolve(1);\nexport const name = 'p' + ready;\nexport function apply() {}\n",
                )],
            ),
            no_type.clone(),
        ),
        esm("mjs-entry", &[("index.mjs", ESM_PLUGIN)]).tap_main("index.mjs"),
        cjs("cjs-entry-cjs-ext", &[("index.cjs", CJS_PLUGIN)]).tap_main("index.cjs"),
        // Module kind: syntax the kind forbids.
        cjs("cjs-with-export", &[("index.js", ESM_PLUGIN)]),
        cjs(
            "cjs-with-tla",
            &[(
                "index.js",
                "await Promise.resolve();\nmodule.exports = { name: 'p', apply() {} };\n",
            )],
        ),
        esm(
            "cjs-ext-with-export",
            &[
                ("index.js", "export * from './impl.cjs';\n"),
                ("impl.cjs", "export const name = 'p';\n"),
            ],
        ),
        esm(
            "syntax-error",
            &[("index.js", "export const name = 'p';\nexport function apply( {\n")],
        ),
        cjs(
            "cjs-syntax-error",
            &[("index.js", "module.exports = { name: 'p', apply() { };\n")],
        ),
        // Relative imports.
        esm(
            "esm-nested-lib",
            &[
                ("index.js", "export { name, apply } from './lib/impl.js';\n"),
                ("lib/impl.js", ESM_PLUGIN),
            ],
        ),
        esm(
            "esm-missing-file",
            &[(
                "index.js",
                "import './lib/gone.js';\nexport const name = 'p';\nexport function apply() {}\n",
            )],
        ),
        esm(
            "esm-no-extension",
            &[
                ("index.js", "export { name, apply } from './lib/impl';\n"),
                ("lib/impl.js", ESM_PLUGIN),
            ],
        ),
        esm(
            "esm-directory-import",
            &[
                ("index.js", "export { name, apply } from './lib';\n"),
                ("lib/index.js", ESM_PLUGIN),
            ],
        ),
        esm(
            "esm-nested-missing",
            &[
                ("index.js", "export { name, apply } from './lib/a.js';\n"),
                (
                    "lib/a.js",
                    "import './b.js';\nexport const name = 'p';\nexport function apply() {}\n",
                ),
            ],
        ),
        cjs(
            "cjs-nested-lib",
            &[
                ("index.js", "module.exports = require('./lib/impl');\n"),
                ("lib/impl.js", CJS_PLUGIN),
            ],
        ),
        cjs(
            "cjs-directory-require",
            &[
                ("index.js", "module.exports = require('./lib');\n"),
                ("lib/index.js", CJS_PLUGIN),
            ],
        ),
        cjs(
            "cjs-missing-require",
            &[(
                "index.js",
                "require('./lib/gone');\nmodule.exports = { name: 'p', apply() {} };\n",
            )],
        ),
        cjs(
            "cjs-require-in-function",
            &[(
                "index.js",
                "module.exports = { name: 'p', apply() { if (false) require('./lib/gone'); } };\n",
            )],
        ),
        // Named imports from local modules.
        esm(
            "esm-named-present",
            &[
                (
                    "index.js",
                    "import { helper } from './lib/h.js';\nexport const name = 'p';\nexport function apply() { helper(); }\n",
                ),
                ("lib/h.js", "export function helper() {}\n"),
            ],
        ),
        esm(
            "esm-named-missing",
            &[
                (
                    "index.js",
                    "import { nope } from './lib/h.js';\nexport const name = 'p';\nexport function apply() { nope(); }\n",
                ),
                ("lib/h.js", "export function helper() {}\n"),
            ],
        ),
        esm(
            "esm-star-present",
            &[
                (
                    "index.js",
                    "import { deep } from './lib/a.js';\nexport const name = 'p';\nexport function apply() { deep(); }\n",
                ),
                ("lib/a.js", "export * from './b.js';\n"),
                ("lib/b.js", "export function deep() {}\n"),
            ],
        ),
        esm(
            "esm-star-missing",
            &[
                (
                    "index.js",
                    "import { shallow } from './lib/a.js';\nexport const name = 'p';\nexport function apply() { shallow(); }\n",
                ),
                ("lib/a.js", "export * from './b.js';\n"),
                ("lib/b.js", "export function deep() {}\n"),
            ],
        ),
        esm(
            "esm-reexport-missing",
            &[
                (
                    "index.js",
                    "export { name, apply, extra } from './lib/impl.js';\n",
                ),
                ("lib/impl.js", ESM_PLUGIN),
            ],
        ),
        esm(
            "esm-default-present",
            &[
                (
                    "index.js",
                    "import impl from './lib/impl.js';\nexport const name = 'p';\nexport function apply() { impl(); }\n",
                ),
                ("lib/impl.js", "export default function impl() {}\n"),
            ],
        ),
        // Built-ins.
        esm(
            "esm-builtin-present",
            &[(
                "index.js",
                "import { readFileSync } from 'node:fs';\nexport const name = 'p';\nexport function apply() { void readFileSync; }\n",
            )],
        ),
        esm(
            "esm-builtin-missing",
            &[(
                "index.js",
                "import { nope } from 'node:fs';\nexport const name = 'p';\nexport function apply() { void nope; }\n",
            )],
        ),
        esm(
            "esm-bare-builtin-present",
            &[(
                "index.js",
                "import { join } from 'path';\nexport const name = 'p';\nexport function apply() { void join; }\n",
            )],
        ),
        esm(
            "esm-bare-builtin-missing",
            &[(
                "index.js",
                "import { nope } from 'path';\nexport const name = 'p';\nexport function apply() { void nope; }\n",
            )],
        ),
        esm(
            "esm-unknown-builtin",
            &[(
                "index.js",
                "import 'node:nope';\nexport const name = 'p';\nexport function apply() {}\n",
            )],
        ),
        esm(
            "esm-builtin-default",
            &[(
                "index.js",
                "import fs from 'node:fs';\nexport const name = 'p';\nexport function apply() { void fs; }\n",
            )],
        ),
        cjs(
            "cjs-builtin-require",
            &[(
                "index.js",
                "const fs = require('node:fs');\nmodule.exports = { name: 'p', apply() { void fs; } };\n",
            )],
        ),
        // Packages.
        esm(
            "esm-package-present",
            &[(
                "index.js",
                "import { Context } from '@deepseek-ai/cordis';\nexport const name = 'p';\nexport function apply() { void Context; }\n",
            )],
        ),
        esm(
            "esm-package-named-missing",
            &[(
                "index.js",
                "import { NoSuchThing } from '@deepseek-ai/cordis';\nexport const name = 'p';\nexport function apply() { void NoSuchThing; }\n",
            )],
        ),
        esm(
            "esm-package-missing",
            &[(
                "index.js",
                "import x from 'some-package-not-installed';\nexport const name = 'p';\nexport function apply() { void x; }\n",
            )],
        ),
        esm(
            "esm-package-subpath-not-exported",
            &[(
                "index.js",
                "import x from '@deepseek-ai/cordis/lib/index.js';\nexport const name = 'p';\nexport function apply() { void x; }\n",
            )],
        ),
        esm(
            "esm-package-conditions",
            &[(
                "index.js",
                "import { z } from 'zod';\nexport const name = 'p';\nexport function apply() { void z; }\n",
            )],
        ),
        esm(
            "esm-package-main-only",
            &[(
                "index.js",
                "import debug from 'debug';\nexport const name = 'p';\nexport function apply() { void debug; }\n",
            )],
        ),
        cjs(
            "cjs-package-present",
            &[(
                "index.js",
                "const debug = require('debug');\nmodule.exports = { name: 'p', apply() { void debug; } };\n",
            )],
        ),
        cjs(
            "cjs-package-missing",
            &[(
                "index.js",
                "const x = require('some-package-not-installed');\nmodule.exports = { name: 'p', apply() { void x; } };\n",
            )],
        ),
        cjs(
            "cjs-package-missing-in-function",
            &[(
                "index.js",
                "module.exports = { name: 'p', apply() { if (false) require('some-package-not-installed'); } };\n",
            )],
        ),
        // Subpath imports (`#name`, the package's `imports` map) and a package
        // importing itself by its own name (through its `exports`).
        with(
            esm(
                "esm-subpath-imports",
                &[
                    (
                        "index.js",
                        "import { helper } from '#util';\nimport { deep } from '#lib/deep';\nimport { side } from '#side';\nexport const name = 'p';\nexport function apply() { helper(); deep(); side(); }\n",
                    ),
                    ("lib/util.js", "export function helper() {}\n"),
                    ("lib/deep.js", "export function deep() {}\n"),
                    ("lib/node.js", "export function side() {}\n"),
                    ("lib/other.js", "export const nope = 1;\n"),
                ],
            ),
            serde_json::json!({ "type": "module", "main": "index.js", "imports": {
                "#util": "./lib/util.js",
                "#lib/*": "./lib/*.js",
                "#side": { "node": "./lib/node.js", "default": "./lib/other.js" }
            } }),
        ),
        with(
            esm(
                "esm-subpath-import-not-defined",
                &[
                    (
                        "index.js",
                        "import { helper } from '#nope';\nexport const name = 'p';\nexport function apply() { helper(); }\n",
                    ),
                    ("lib/util.js", "export function helper() {}\n"),
                ],
            ),
            serde_json::json!({ "type": "module", "main": "index.js", "imports": { "#util": "./lib/util.js" } }),
        )
        .says("Package import specifier \"#nope\" is not defined in package"),
        with(
            cjs(
                "cjs-subpath-imports",
                &[
                    (
                        "index.js",
                        "const { helper } = require('#util');\nmodule.exports = { name: 'p', apply() { helper(); } };\n",
                    ),
                    ("lib/util.js", "exports.helper = function helper() {};\n"),
                ],
            ),
            serde_json::json!({ "type": "commonjs", "main": "index.js", "imports": { "#util": { "require": "./lib/util.js" } } }),
        ),
        with(
            esm(
                "esm-self-reference",
                &[
                    (
                        "index.js",
                        "import { helper } from '@local/p/helpers';\nexport const name = 'p';\nexport function apply() { helper(); }\n",
                    ),
                    ("lib/h.js", "export function helper() {}\n"),
                ],
            ),
            serde_json::json!({ "name": "@local/p", "type": "module", "exports": { ".": "./index.js", "./helpers": "./lib/h.js" } }),
        ),
        // JSON.
        esm(
            "esm-json-with-attribute",
            &[
                (
                    "index.js",
                    "import data from './data.json' with { type: 'json' };\nexport const name = data.name;\nexport function apply() {}\n",
                ),
                ("data.json", "{\"name\": \"p\"}\n"),
            ],
        ),
        esm(
            "esm-json-without-attribute",
            &[
                (
                    "index.js",
                    "import data from './data.json';\nexport const name = data.name;\nexport function apply() {}\n",
                ),
                ("data.json", "{\"name\": \"p\"}\n"),
            ],
        ),
        cjs(
            "cjs-json-require",
            &[
                (
                    "index.js",
                    "const data = require('./data.json');\nmodule.exports = { name: data.name, apply() {} };\n",
                ),
                ("data.json", "{\"name\": \"p\"}\n"),
            ],
        ),
        // CommonJS globals in an ES module.
        esm(
            "esm-require-top",
            &[(
                "index.js",
                "const fs = require('node:fs');\nexport const name = 'p';\nexport function apply() { void fs; }\n",
            )],
        ),
        esm(
            "esm-require-in-function",
            &[(
                "index.js",
                "export const name = 'p';\nexport function apply() { if (false) require('node:fs'); }\n",
            )],
        ),
        esm(
            "esm-dirname-top",
            &[(
                "index.js",
                "const here = __dirname;\nexport const name = 'p' + here;\nexport function apply() {}\n",
            )],
        ),
        esm(
            "esm-module-exports-top",
            &[("index.js", "module.exports = { name: 'p', apply() {} };\n")],
        ),
        esm(
            "esm-typeof-require",
            &[(
                "index.js",
                "const cjs = typeof require === 'function';\nexport const name = 'p' + cjs;\nexport function apply() {}\n",
            )],
        ),
        // Manifests and entries.
        esm("main-fallback-to-index", &[("index.js", ESM_PLUGIN)]).tap_main("lib/index.js"),
        esm("main-missing-no-index", &[("other.js", ESM_PLUGIN)]).tap_main("lib/index.js"),
        with(
            esm("exports-entry", &[("lib/entry.js", ESM_PLUGIN)]),
            serde_json::json!({ "type": "module", "exports": { ".": "./lib/entry.js", "./package.json": "./package.json" } }),
        ),
        with(
            esm("exports-entry-missing", &[("index.js", ESM_PLUGIN)]),
            serde_json::json!({ "type": "module", "exports": { ".": "./lib/entry.js" } }),
        ),
        with(
            esm(
                "exports-conditions",
                &[("esm.js", ESM_PLUGIN), ("cjs.cjs", CJS_PLUGIN)],
            ),
            serde_json::json!({ "type": "module", "exports": { ".": { "import": "./esm.js", "require": "./cjs.cjs" } } }),
        ),
        with(
            esm("exports-no-dot", &[("index.js", ESM_PLUGIN)]),
            serde_json::json!({ "type": "module", "exports": { "./client": "./index.js" } }),
        ),
        // Nested package.json scopes.
        esm(
            "nested-scope-commonjs-with-export",
            &[
                ("index.js", "export { name, apply } from './lib/impl.js';\n"),
                ("lib/package.json", "{\"type\": \"commonjs\"}\n"),
                ("lib/impl.js", ESM_PLUGIN),
            ],
        ),
        cjs(
            "nested-scope-module",
            &[
                (
                    "index.js",
                    "module.exports = { name: 'p', apply() {} };\nrequire('./lib/ok.js');\n",
                ),
                ("lib/package.json", "{\"type\": \"commonjs\"}\n"),
                ("lib/ok.js", "module.exports = 1;\n"),
            ],
        ),
        esm(
            "esm-imports-mjs",
            &[
                ("index.js", "export { name, apply } from './lib/impl.mjs';\n"),
                ("lib/impl.mjs", ESM_PLUGIN),
            ],
        ),
        cjs(
            "cjs-requires-missing-nested",
            &[
                ("index.js", "module.exports = require('./lib/a');\n"),
                (
                    "lib/a.js",
                    "require('./b');\nmodule.exports = { name: 'p', apply() {} };\n",
                ),
            ],
        ),
        // A named import from a CommonJS module: only running it tells.
        esm(
            "esm-named-from-cjs",
            &[
                (
                    "index.js",
                    "import { helper } from './lib/h.cjs';\nexport const name = 'p';\nexport function apply() { helper(); }\n",
                ),
                ("lib/h.cjs", "exports.helper = function helper() {};\n"),
            ],
        ),
    ]
}

trait TapMain {
    fn tap_main(self, main: &str) -> Self;
}

impl TapMain for Case {
    fn tap_main(mut self, main: &str) -> Self {
        self.manifest["main"] = serde_json::json!(main);
        self
    }
}
