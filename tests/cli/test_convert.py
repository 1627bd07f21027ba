"""Issue 34, item 3 and acceptance 4: `flexq convert` turns Kueue manifests from kueue.x-k8s.io/v1beta1 into
v1beta2 with the conversion the twin's API server runs. Every Kueue manifest of examples/ and the tutorial comes
out as v1beta2 that a Kueue 0.20.7 twin accepts, holding the very objects the v1beta1 file makes on Kueue 0.19.2
(the round trip); comments stay where only lines change; what cannot convert losslessly is named; malformed input
is refused naming the file, the document and the field, and nothing is written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from flexq import Twin
from flexq.api.kueue_convert import convert_text
from flexq.cli import tutorial
from flexq.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(
    p for p in (ROOT / "examples").rglob("*.yaml") if "apiVersion: kueue.x-k8s.io/v1beta1" in p.read_text()
)
SERVER_SET = {"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "annotations"}


def flexq(*args: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flexq.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def _stored(twin: Twin, text: str) -> dict[tuple[str, str], dict]:
    """What applying ``text`` stores of each Kueue object (as the storage version; server-set fields left out)."""
    out = {}
    for obj in twin.apply(text):
        if not obj["apiVersion"].startswith("kueue.x-k8s.io/"):
            continue
        got = twin.get(obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace"))
        got["metadata"] = {k: v for k, v in got["metadata"].items() if k not in SERVER_SET}
        got.pop("status", None)
        out[(got["kind"], got["metadata"]["name"])] = got
    return out


def test_the_examples_have_kueue_manifests_to_convert() -> None:
    assert len(EXAMPLES) >= 8 and ROOT / "examples/tutorial-week/queue-tutorial.yaml" in EXAMPLES


@pytest.mark.parametrize("path", EXAMPLES, ids=[str(p.relative_to(ROOT)) for p in EXAMPLES])
def test_every_example_converts_to_what_kueue_0_20_7_accepts_and_holds_the_same_objects(path: Path) -> None:
    text = path.read_text()
    result = convert_text(text, str(path))
    assert result.converted == text.count("apiVersion: kueue.x-k8s.io/v1beta1") > 0
    assert "kueue.x-k8s.io/v1beta1" not in result.text
    # every comment line is still there (only apiVersion lines changed)
    assert [ln for ln in text.splitlines() if "#" in ln] == [
        ln for ln in result.text.splitlines() if "#" in ln
    ]
    old, new = Twin(clock="virtual", kueue="0.19.2"), Twin(clock="virtual", kueue="0.20.7")
    try:
        assert _stored(new, result.text) == _stored(old, text)  # the same objects, as v1beta2
    finally:
        old.close()
        new.close()


def test_the_tutorials_file_converts_through_the_cli_with_its_placeholders_and_comments(
    tmp_path: Path,
) -> None:
    src = tmp_path / "dws-tpu-queue.yaml"
    src.write_text(tutorial.read("dws-tpu-queue.yaml"))
    r = flexq("convert", str(src))
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("apiVersion: kueue.x-k8s.io/v1beta2") == 7 and "v1beta1" not in r.stdout
    assert "${ONDEMAND_NODEPOOL}" in r.stdout and '- name: "default-cpu" # Used for Ray Head Pod.' in r.stdout
    assert "7 Kueue object(s) converted to kueue.x-k8s.io/v1beta2" in r.stderr
    # what `flexq tutorial init` writes beside the published file is this conversion
    assert tutorial.read("dws-tpu-queue.v1beta2.yaml").endswith(r.stdout)
    # after envsubst, the 0.20.7 twin holds what the published file makes on 0.19.2
    old, new = Twin(clock="virtual", kueue="0.19.2"), Twin(clock="virtual")
    try:
        env = tutorial.TUTORIAL_ENV
        assert _stored(new, tutorial.envsubst(r.stdout, env)) == _stored(old, tutorial.queue_yaml())
    finally:
        old.close()
        new.close()


def test_stdin_many_documents_other_kinds_pass_through_and_converting_twice_changes_nothing() -> None:
    text = tutorial.queue_yaml() + "---\n" + tutorial.rayjob_yaml(1)
    once = flexq("convert", "-", stdin=text)
    assert once.returncode == 0, once.stderr
    docs = list(yaml.safe_load_all(once.stdout))
    assert [d["apiVersion"] for d in docs] == ["kueue.x-k8s.io/v1beta2"] * 7 + ["ray.io/v1"]
    assert once.stdout.endswith(tutorial.rayjob_yaml(1))  # the RayJob, byte for byte
    twice = flexq("convert", "-", stdin=once.stdout)
    assert twice.returncode == 0 and twice.stdout == once.stdout
    assert "0 Kueue object(s) converted" in twice.stderr


LOSSY = """\
apiVersion: kueue.x-k8s.io/v1beta1
kind: AdmissionCheck
metadata: {name: old-check}
spec:
  controllerName: kueue.x-k8s.io/provisioning-request
  retryDelayMinutes: 15   # deprecated
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: team   # the team's queue
spec:
  cohort: research   # shares with the research cohort
  namespaceSelector: {}
  flavorFungibility: {whenCanBorrow: Borrow}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: listed}
spec:
  admissionChecks: [old-check]   # the list form
"""


def test_what_does_not_convert_losslessly_is_named_and_comments_stay_where_only_lines_change() -> None:
    r = flexq("convert", "-", stdin=LOSSY)
    assert r.returncode == 0, r.stderr
    notes = [ln for ln in r.stderr.splitlines() if ln.startswith("note: ")]
    assert notes == [
        'note: STDIN: document 1 (AdmissionCheck "old-check"): spec.retryDelayMinutes: dropped: v1beta2 has no '
        "such field (deprecated in v1beta1 and never used; retries follow the ProvisioningRequestConfig's "
        "retryStrategy)",
        'note: STDIN: document 2 (ClusterQueue "team"): spec.flavorFungibility.whenCanBorrow: "Borrow" becomes '
        '"MayStopSearch" (v1beta2 has only the new name; v1beta1 read it so)',
        'note: STDIN: document 3 (ClusterQueue "listed"): its fields changed shape, so it is written anew: the '
        "comments inside it are not kept",
    ], r.stderr
    assert "retryDelayMinutes" not in r.stdout
    assert "  cohortName: research   # shares with the research cohort" in r.stdout  # renamed in place
    assert "  name: team   # the team's queue" in r.stdout
    docs = list(yaml.safe_load_all(r.stdout))
    assert docs[1]["spec"]["flavorFungibility"] == {"whenCanBorrow": "MayStopSearch"}
    assert docs[2]["spec"] == {"admissionChecksStrategy": {"admissionChecks": [{"name": "old-check"}]}}


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (  # a quantity that is not one
            tutorial.queue_yaml().replace("nominalQuota: 40", "nominalQuota: forty"),
            'bad.yaml: document 4 (ClusterQueue "cluster-queue") '
            '(spec.resourceGroups[0].flavors[1].resources[0].nominalQuota): Invalid value: "forty"',
        ),
        (  # an unknown field
            tutorial.queue_yaml().replace("  clusterQueue: ", "  clusterQueu: "),
            'bad.yaml: document 5 (LocalQueue "user-queue") (spec.clusterQueu): field not declared in schema',
        ),
        (
            "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: q}\nspec: [\n",
            "bad.yaml: document 1: ",
        ),
        (
            "---\napiVersion: v1\nkind: ConfigMap\n---\n- a list\n",
            "bad.yaml: document 2: a document must be an object",
        ),
        (
            "apiVersion: kueue.x-k8s.io/v1beta1\nkind: Topology\nmetadata: {name: t}\n",
            "bad.yaml: document 1 (kind)",
        ),
        (
            "a: 1\na: 2\n",
            'bad.yaml: document 1: error converting YAML to JSON: yaml: key "a" already set in map',
        ),
    ],
    ids=["quantity", "unknown-field", "not-yaml", "not-a-mapping", "unknown-kind", "duplicate-key"],
)
def test_malformed_input_is_refused_naming_file_document_and_field(
    tmp_path: Path, text: str, where: str
) -> None:
    (tmp_path / "bad.yaml").write_text(text)
    out = tmp_path / "out.yaml"
    r = flexq("convert", "bad.yaml", "-o", str(out), cwd=tmp_path)
    assert r.returncode == 1 and r.stdout == ""
    assert where in " ".join(r.stderr.split()), r.stderr
    assert not out.exists()  # nothing written
    with pytest.raises(InputError):
        convert_text(text, "bad.yaml")


def test_a_file_that_cannot_be_read_is_named(tmp_path: Path) -> None:
    r = flexq("convert", str(tmp_path / "missing.yaml"))
    assert r.returncode == 1 and f"{tmp_path / 'missing.yaml'}: cannot read it" in r.stderr
    r = flexq("convert", str(tmp_path))
    assert r.returncode == 1 and "not a regular file" in r.stderr
