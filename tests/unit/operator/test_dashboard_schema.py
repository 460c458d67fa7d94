"""The chart's Grafana dashboard against Grafana's own dashboard schema.

Grafana publishes its dashboard schema as TypeScript types generated from its CUE kinds: the
npm package @grafana/schema (`Dashboard`, and each panel plugin's `Options` / `FieldConfig`).
The test writes the dashboard JSON as a TypeScript object literal typed `Dashboard` (each
panel's options and custom field config typed as its plugin's, Partial: Grafana fills the
defaults) and compiles it with `tsc --strict --noEmit`: a missing required field, a wrong type,
an unknown enum value or an unknown property (TypeScript's excess-property check of object
literals) fails with the compiler's line. A mutated copy shows each kind of break is caught.

@grafana/schema and typescript come from the npm registry, pinned by
e2e/tools/grafana-schema/package-lock.json (e2e/tools/install-grafana-schema.sh, cached; `make
test`'s prebuild installs it ahead). Marker `slow`: each tsc run takes a few seconds.
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
DASHBOARD = ROOT / "charts" / "metaquorum" / "dashboards" / "metaquorum-raft.json"
PANEL_TYPES = {  # panel type -> its plugin's name in @grafana/schema's types modules
    "timeseries": "TimeSeries",
    "stat": "Stat",
}
pytestmark = pytest.mark.slow

TSCONFIG = {
    "compilerOptions": {
        "strict": True,
        "noEmit": True,
        "module": "nodenext",
        "moduleResolution": "nodenext",
        "skipLibCheck": True,
        "types": [],
    },
}


@pytest.fixture(scope="module")
def schema() -> Path:
    out = subprocess.run(
        [str(ROOT / "e2e" / "tools" / "install-grafana-schema.sh")],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    return Path(out.stdout.strip().splitlines()[-1]) / "node_modules"


def typescript(dashboard: dict[str, Any]) -> str:
    """The dashboard as TypeScript: typed Dashboard, and each panel's options and custom field
    config typed as its plugin's."""
    lines = ["import type { Dashboard } from '@grafana/schema';"]
    for kind, plugin in sorted(PANEL_TYPES.items()):
        path = (
            f"@grafana/schema/dist/esm/raw/composable/{kind}/panelcfg/x/{plugin}PanelCfg_types.gen"
        )
        lines.append(f"import type * as {kind} from '{path}';")
    lines.append(f"export const dashboard: Dashboard = {json.dumps(dashboard, indent=1)};")
    for i, panel in enumerate(dashboard.get("panels", [])):
        kind = panel.get("type")
        if kind not in PANEL_TYPES:
            continue
        if "options" in panel:
            lines.append(
                f"export const options{i}: Partial<{kind}.Options> = "
                f"{json.dumps(panel['options'])};"
            )
        custom = panel.get("fieldConfig", {}).get("defaults", {}).get("custom")
        if custom is not None and kind == "timeseries":
            lines.append(
                f"export const custom{i}: Partial<{kind}.FieldConfig> = {json.dumps(custom)};"
            )
    return "\n".join(lines) + "\n"


def tsc(
    node_modules: Path, dashboards: dict[str, dict[str, Any]], tmp: Path
) -> subprocess.CompletedProcess[str]:
    """Compile each dashboard (file stem -> JSON) as its own module, in one tsc run."""
    (tmp / "node_modules").symlink_to(node_modules)
    config = {**TSCONFIG, "files": [f"{stem}.ts" for stem in dashboards]}
    (tmp / "tsconfig.json").write_text(json.dumps(config))
    for stem, dashboard in dashboards.items():
        (tmp / f"{stem}.ts").write_text(typescript(dashboard))
    return subprocess.run(
        [str(node_modules / ".bin" / "tsc"), "-p", str(tmp)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_dashboard_type_checks_against_grafanas_dashboard_schema(
    schema: Path, tmp_path: Path
) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert {p["type"] for p in dashboard["panels"]} <= set(PANEL_TYPES)
    proc = tsc(schema, {"dashboard": dashboard}, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _mutations() -> list[tuple[str, Any, str]]:
    """(what, how to break a dashboard, the compiler's words for it)"""

    def rename(d: dict[str, Any]) -> None:
        d["panelz"] = d.pop("panels")

    def tooltip(d: dict[str, Any]) -> None:
        d["graphTooltip"] = "shared"

    def grid(d: dict[str, Any]) -> None:
        d["panels"][0]["gridPos"]["w"] = "12"

    def variable(d: dict[str, Any]) -> None:
        d["templating"]["list"][1]["type"] = "queryy"

    def schema_version(d: dict[str, Any]) -> None:
        del d["schemaVersion"]

    def legend(d: dict[str, Any]) -> None:
        first = next(p for p in d["panels"] if p["type"] == "timeseries")
        first["options"] = {"legend": {"displayMode": "bullets"}}

    return [
        ("an unknown property", rename, "'\"panelz\"' does not exist in type 'Dashboard'"),
        ("a wrong type", tooltip, "not assignable to type 'DashboardCursorSync"),
        ("a string grid width", grid, "Type 'string' is not assignable to type 'number'"),
        ("an unknown variable type", variable, "not assignable to type 'VariableType'"),
        ("no schemaVersion", schema_version, "Property 'schemaVersion' is missing"),
        ("a bad panel option", legend, "not assignable to type 'LegendDisplayMode"),
    ]


MUTATIONS = _mutations()


def test_each_kind_of_break_in_a_copy_of_the_dashboard_fails_the_check(
    schema: Path, tmp_path: Path
) -> None:
    broken = {}
    for i, (_, mutate, _) in enumerate(MUTATIONS):
        copied = copy.deepcopy(json.loads(DASHBOARD.read_text()))
        mutate(copied)
        broken[f"broken{i}"] = copied
    proc = tsc(schema, broken, tmp_path)
    assert proc.returncode != 0
    for i, (what, _, error) in enumerate(MUTATIONS):
        mine = [line for line in proc.stdout.splitlines() if f"broken{i}.ts(" in line]
        assert mine, f"{what} passed the schema check"
        assert any(error in line for line in mine), (what, mine)
