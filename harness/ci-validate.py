"""Validates one of dshkit's CI outputs with a real validator; exits 0 when valid,
1 with every error on stderr when not.

    python ci-validate.py junit FILE XSD    # xmlschema against the Jenkins JUnit XSD
    python ci-validate.py sarif FILE SCHEMA # jsonschema (draft 4, formats checked)

Installed by `cargo xtask setup` (harness/pypi/ci-validators.txt); the schemas
come from harness/ci-schemas.
"""

import json
import sys


def junit(path, xsd):
    import xmlschema

    schema = xmlschema.XMLSchema(xsd)
    return [str(error) for error in schema.iter_errors(path)]


def sarif(path, schema_path):
    import jsonschema

    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    with open(path, encoding="utf-8") as f:
        log = json.load(f)
    # Every format jsonschema knows is checked: the schema is draft 4 but names
    # `uri-reference`, which only later drafts define.
    checker = jsonschema.FormatChecker()
    missing = {"uri", "uri-reference"} - set(checker.checkers)
    if missing:
        return [f"jsonschema cannot check the formats {sorted(missing)}"]
    validator = jsonschema.Draft4Validator(schema, format_checker=checker)
    return [
        f"{'/'.join(map(str, error.absolute_path))}: {error.message}"
        for error in validator.iter_errors(log)
    ]


def main():
    kind, path, schema = sys.argv[1:4]
    errors = {"junit": junit, "sarif": sarif}[kind](path, schema)
    for error in errors:
        print(error, file=sys.stderr)
    sys.exit(1 if errors else 0)


main()
