"""``flexq tutorial``: the live tutorial's files, and its set-up through flexq where gcloud and kubectl are not.

Owns: ``files()`` (file name -> text: ``dws-tpu-queue.yaml`` and ``rayjob-tpu-v6e-dws.yaml`` as published, with
their ``${...}`` placeholders for ``envsubst``; beside them ``dws-tpu-queue.v1beta2.yaml``, the same objects as
kueue.x-k8s.io/v1beta2, which Kueue 0.20 and later serve instead of v1beta1; ``train.py``; ``tutorial.sh``, the
tutorial's commands as published, applying the v1beta2 queue file where the cluster does not serve v1beta1;
``cleanup.sh``, its clean-up step), ``init`` (writes them into a folder; a file there that differs is
replaced only with ``--force``), ``setup`` (the tutorial's gcloud and kubectl steps — the cluster, both node
pools, the flex-start check, ``envsubst < dws-tpu-queue.yaml | kubectl apply -f -`` and the script's ConfigMap —
against the served twin through its GKE and Kubernetes APIs, each step printed as the command it stands for)
and ``cleanup`` (the cluster's deletion). The data and the request bodies come from ``flexq.cli.tutorial``.
Must not import flexq.assembly, flexq.twin or flexq.http.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from flexq.cli import tutorial
from flexq.clock import WallClock

__all__ = ["files", "init", "setup", "cleanup", "run", "add_parser", "DEFAULT_DIR", "SUBMIT_LINES"]

DEFAULT_DIR = "flexq-tutorial"
SCRIPT_CONFIGMAP = "jax-train-script"
# the tutorial's two RayJobs through `flexq submit` (it rebuilds the tutorial's manifest from these flags)
SUBMIT_LINES = [
    f"flexq submit train.py --name rayjob-tpu-v6e-dws-{i} --configmap {SCRIPT_CONFIGMAP} "
    "--pip 'jax[tpu]==0.8.2' --pip pandas==2.3.3"
    for i in (1, 2)
]


def files() -> dict[str, str]:
    """The tutorial's files as ``flexq tutorial init`` writes them."""
    return {
        tutorial.QUEUE_FILE: tutorial.read(tutorial.QUEUE_FILE),
        tutorial.QUEUE_FILE_V1BETA2: tutorial.read(tutorial.QUEUE_FILE_V1BETA2),
        "rayjob-tpu-v6e-dws.yaml": tutorial.read("rayjob-tpu-v6e-dws.yaml"),
        "train.py": tutorial.train_script(),
        "tutorial.sh": tutorial.read("tutorial.sh"),
        "cleanup.sh": tutorial.read("cleanup.sh"),
    }


class TutorialError(RuntimeError):
    """A step that cannot be done, said in one line."""


def init(folder: Path, force: bool = False) -> list[str]:
    """Write ``files()`` into ``folder`` (made if need be); returns one line per file. A file there that
    differs is an error unless ``force`` (nothing is written then)."""
    if folder.exists() and not folder.is_dir():
        raise TutorialError(f"{folder} exists and is not a folder")
    plan = []
    for name, text in files().items():
        path = folder / name
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise TutorialError(f"{path} is not a regular file: nothing was written")
        old = path.read_text(encoding="utf-8", errors="replace") if path.exists() else None
        if old is not None and old != text and not force:
            raise TutorialError(
                f"{path} exists and differs from the tutorial's: nothing was written (--force replaces it)"
            )
        plan.append(
            (path, text, "unchanged" if old == text else ("replaced" if old is not None else "written"))
        )
    folder.mkdir(parents=True, exist_ok=True)
    for path, text, what in plan:
        if what != "unchanged":
            path.write_text(text, encoding="utf-8")
            if path.suffix == ".sh":
                path.chmod(0o755)
    return [f"{what:<9} {path}" for path, _, what in plan]


def _wait_operation(home: Any, op: dict[str, Any], what: str, timeout: float = 300.0) -> None:
    from flexq.cli.lifecycle import gke_request

    clock = WallClock()
    deadline = clock.now() + timeout
    zone = tutorial.TUTORIAL_ENV["ZONE"]
    while op.get("status") != "DONE":
        if clock.now() > deadline:
            raise TutorialError(f"{what}: operation {op.get('name')} did not finish in {timeout:g}s")
        clock.sleep(0.5)
        op = gke_request(
            home, "GET", f"/v1/projects/{home.project()}/locations/{zone}/operations/{op['name']}"
        )
    if op.get("error"):
        raise TutorialError(f"{what} failed: {op['error'].get('message')}")


def _source(folder: Path | None, name: str) -> str:
    """A tutorial file from ``folder`` when it has it (the user may have edited it), else the shipped one."""
    if folder is not None and (folder / name).is_file():
        return (folder / name).read_text(encoding="utf-8")
    return files()[name]


def setup(home: Any, folder: Path | None, say: Callable[[str], None]) -> None:
    """The tutorial's gcloud and kubectl steps against the twin serving from ``home`` (see module docstring)."""
    from flexq.cli import kubeclient
    from flexq.cli.lifecycle import gke_request, running

    env, project = tutorial.TUTORIAL_ENV, home.project()
    say(
        f"gcloud container clusters create {env['CLUSTER_NAME']} --cluster-version={env['GKE_VERSION']} "
        f"--machine-type=n2-standard-16 --location={env['ZONE']} --enable-image-streaming "
        f"--addons=RayOperator --project={project}"
    )
    _wait_operation(
        home, gke_request(home, "POST", *tutorial.create_cluster_request(project)), "clusters create"
    )
    for dws in (False, True):
        path, body = tutorial.create_node_pool_request(project, dws=dws)
        flags = " --enable-queued-provisioning --flex-start" if dws else ""
        say(
            f"gcloud container node-pools create {body['nodePool']['name']} --cluster={env['CLUSTER_NAME']} "
            f"--location={env['ZONE']} --machine-type=ct6e-standard-4t --tpu-topology=4x4 "
            f"--reservation-affinity=none --enable-autoscaling{flags} --num-nodes=0 --min-nodes=0 --max-nodes=4"
        )
        _wait_operation(
            home, gke_request(home, "POST", path, body), f"node-pools create {body['nodePool']['name']}"
        )
    got = gke_request(home, "GET", f"{path}/{env['DWS_NODEPOOL']}")
    say(
        f'gcloud container node-pools describe {env["DWS_NODEPOOL"]} --format="get(config.flexStart)": '
        f"{bool((got.get('config') or {}).get('flexStart'))}"
    )
    info = running(home)
    assert info is not None  # gke_request has just reached it
    api = kubeclient.connect(info["kubeconfig"], "flexq")
    import yaml
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    co, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
    done = []
    queue_text = _source(folder, tutorial.QUEUE_FILE)
    applied = f"envsubst < {tutorial.QUEUE_FILE} | kubectl apply -f -"
    if kubeclient.v1beta1_gone(api):  # Kueue 0.20+: the published v1beta1 objects would be refused
        from flexq.api.kueue_convert import convert_text
        from flexq.errors import InputError

        try:
            queue_text = convert_text(queue_text, tutorial.QUEUE_FILE).text
        except InputError as exc:
            raise TutorialError(str(exc)) from None
        applied = f"envsubst < {tutorial.QUEUE_FILE} | flexq convert - | kubectl apply -f -"
        say(
            "this cluster's Kueue serves kueue.x-k8s.io/v1beta2 only (Kueue 0.20 and later, kueue#14558): "
            f"{tutorial.QUEUE_FILE} (v1beta1) is applied converted to v1beta2"
        )
    try:
        for doc in yaml.safe_load_all(tutorial.envsubst(queue_text, env)):
            if not doc:
                continue
            group, version = doc["apiVersion"].split("/")
            plural, name = doc["kind"].lower() + "s", doc["metadata"]["name"]
            ns = doc["metadata"].get("namespace") or "default" if doc["kind"] == "LocalQueue" else None
            try:
                if ns:
                    co.create_namespaced_custom_object(group, version, ns, plural, doc)
                else:
                    co.create_cluster_custom_object(group, version, plural, doc)
                done.append(f"{doc['kind'].lower()}.{group}/{name} created")
            except ApiException as exc:
                if exc.status != 409:
                    raise
                if ns:
                    co.patch_namespaced_custom_object(group, version, ns, plural, name, doc)
                else:
                    co.patch_cluster_custom_object(group, version, plural, name, doc)
                done.append(f"{doc['kind'].lower()}.{group}/{name} configured")
        say(f"{applied}: " + ", ".join(done))
        cm: Any = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": SCRIPT_CONFIGMAP},
            "data": {"train.py": _source(folder, "train.py")},
        }
        try:
            core.create_namespaced_config_map("default", cm)
            what = "created"
        except ApiException as exc:
            if exc.status != 409:
                raise
            have = core.read_namespaced_config_map(SCRIPT_CONFIGMAP, "default")
            if dict(have.data or {}) != cm["data"]:
                raise TutorialError(
                    f'configmap "{SCRIPT_CONFIGMAP}" exists with another train.py: kubectl delete configmap '
                    f"{SCRIPT_CONFIGMAP}, then run this again"
                ) from None
            what = "unchanged"
        say(
            f"kubectl create configmap {SCRIPT_CONFIGMAP} --from-file=train.py: configmap/{SCRIPT_CONFIGMAP} {what}"
        )
    except ApiException as exc:
        raise TutorialError(f"the Kubernetes API refused it: {exc.status} {exc.reason}") from None


def cleanup(home: Any, say: Callable[[str], None]) -> None:
    """``gcloud container clusters delete tpu-cluster --quiet`` against the twin serving from ``home``."""
    from flexq.cli.lifecycle import gke_request

    env = tutorial.TUTORIAL_ENV
    say(f"gcloud container clusters delete {env['CLUSTER_NAME']} --location={env['ZONE']} --quiet")
    op = gke_request(
        home,
        "DELETE",
        f"/v1/projects/{home.project()}/locations/{env['ZONE']}/clusters/{env['CLUSTER_NAME']}",
    )
    _wait_operation(home, op, "clusters delete")


def run(args: argparse.Namespace, console: Console, err_console: Console) -> int:
    from flexq.cli import kubeclient
    from flexq.cli.lifecycle import Home, TwinError

    def say(text: str) -> None:
        console.print(text, markup=False, highlight=False, soft_wrap=True)

    try:
        if args.tutorial_command == "init":
            folder = Path(args.dir)
            for line in init(folder, force=args.force):
                say(line)
            say(
                f"\nThe tutorial's files are in {folder}/. Next (the README's live tutorial):\n"
                f"  cd {folder}\n"
                '  flexq up && eval "$(flexq env)"   # the twin, with gcloud and kubectl pointed at it\n'
                "  bash tutorial.sh                  # the tutorial's commands as published\n"
                "  flexq status -w                   # watch job 1 on plan A, job 2 wait for DWS (Ctrl-C ends)\n"
                "  kubectl logs job/rayjob-tpu-v6e-dws-1\n"
                "  bash cleanup.sh && flexq down\n"
                "Without gcloud or kubectl: `flexq tutorial setup`, then\n  "
                + "\n  ".join(SUBMIT_LINES)
                + "\n  flexq logs -f rayjob-tpu-v6e-dws-2, then `flexq tutorial cleanup`"
            )
            return 0
        home = Home.resolve(args.home)
        if args.tutorial_command == "setup":
            setup(home, Path(args.dir) if args.dir else None, say)
            say(
                "\nThe cluster, its node pools and Kueue's queues are ready. Submit the tutorial's two jobs:\n  "
                + "\n  ".join(SUBMIT_LINES)
                + "\nthen: flexq status -w, flexq logs -f rayjob-tpu-v6e-dws-1, flexq tutorial cleanup"
            )
            return 0
        cleanup(home, say)
        return 0
    except (TutorialError, TwinError, kubeclient.ClientError, OSError) as exc:
        err_console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        return 1


def add_parser(sub: Any, examples: Callable[..., str]) -> argparse.ArgumentParser:
    t = sub.add_parser(
        "tutorial",
        help="the live tutorial's files (and its set-up without gcloud or kubectl)",
        description="The live tutorial, from files flexq gives you. `init` writes the tutorial's manifests "
        "(with their ${...} placeholders, for envsubst), train.py, tutorial.sh (its commands as published) "
        "and cleanup.sh into a folder; run them against `flexq up` with gcloud and kubectl. Where those are "
        "not installed, `setup` does the tutorial's gcloud and kubectl steps through the twin's APIs, "
        "`flexq submit` the jobs, and `cleanup` deletes the cluster.",
        epilog=examples(
            "flexq tutorial init tutorial && cd tutorial && bash tutorial.sh",
            "flexq tutorial setup && " + SUBMIT_LINES[0],
            "flexq tutorial cleanup",
        ),
    )
    ts = t.add_subparsers(dest="tutorial_command", required=True, metavar="init|setup|cleanup")
    i = ts.add_parser(
        "init",
        help="write the tutorial's files into a folder",
        description="Write dws-tpu-queue.yaml, rayjob-tpu-v6e-dws.yaml, train.py, tutorial.sh and cleanup.sh "
        "as published, and dws-tpu-queue.v1beta2.yaml: the queue file for Kueue 0.20 and later, which no longer "
        "serve its kueue.x-k8s.io/v1beta1 (tutorial.sh applies it where the cluster does not serve v1beta1).",
        epilog=examples("flexq tutorial init", "flexq tutorial init ~/tpu-tutorial --force"),
    )
    i.add_argument("dir", nargs="?", default=DEFAULT_DIR, help=f"the folder (default: ./{DEFAULT_DIR})")
    i.add_argument("--force", action="store_true", help="replace files there that differ")
    s = ts.add_parser(
        "setup",
        help="the tutorial's gcloud and kubectl steps, through the running twin",
        description="Against the twin `flexq up` started: create the tutorial's cluster and both node pools, "
        "check flex-start, apply dws-tpu-queue.yaml after envsubst (converted to kueue.x-k8s.io/v1beta2 where "
        "the cluster's Kueue no longer serves v1beta1) and create the jax-train-script "
        "ConfigMap, printing the command each step stands for.",
        epilog=examples("flexq tutorial setup", "flexq tutorial setup --dir tutorial   # its edited files"),
    )
    s.add_argument("--dir", default=None, help="take dws-tpu-queue.yaml and train.py from this folder")
    s.add_argument("--home", help="the twin's state directory (default: $FLEXQ_HOME or ~/.flexq)")
    c = ts.add_parser(
        "cleanup",
        help="delete the tutorial's cluster (gcloud container clusters delete)",
        description="Delete the tutorial's cluster from the running twin, as its clean-up step does.",
        epilog=examples("flexq tutorial cleanup"),
    )
    c.add_argument("--home", help="the twin's state directory (default: $FLEXQ_HOME or ~/.flexq)")
    return t
