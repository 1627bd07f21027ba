#!/usr/bin/env python3
"""Generate ``src/flexq/http/kube/proto_schemas.py``: the Kubernetes protobuf field tables that
``flexq.http.kube.protobuf`` decodes kubectl's bodies with.

What it reads, from two git repositories (bare mirrors or checkouts; it uses ``git show <commit>:<path>``):

- ``k8s.io/api`` (github.com/kubernetes/api): ``core/v1``, ``batch/v1`` and the packages they import
  (``scheduling/v1alpha3``), each its ``generated.proto`` and ``types.go``;
- ``k8s.io/apimachinery`` (github.com/kubernetes/apimachinery): ``pkg/apis/meta/v1``, ``pkg/runtime``,
  ``pkg/runtime/schema``, ``pkg/util/intstr``, ``pkg/api/resource``.

``generated.proto`` gives each message's field numbers and wire types. ``types.go`` gives what the proto
file cannot: the JSON name and ``omitempty`` from each field's ``json`` tag, whether the Go field is a
pointer (so a zero on the wire is still "set"), and whether an embedded struct is inlined into its parent's
JSON (``Volume.volumeSource``, ``Probe.handler``). The decoder uses these to build the same JSON that
``encoding/json`` prints for the object the API server decodes. Messages with a hand-written codec in
apimachinery (``Quantity``, ``IntOrString``, ``Time``, ``MicroTime``, ``Duration``, ``RawExtension``,
``FieldsV1``) are emitted as named special types instead of messages.

Only messages reachable from ``ROOTS`` (the built-in kinds the twin serves, see ``flexq.api.core.KINDS``)
are emitted. The output pins both commits in its header.

Usage (the ``fetch`` tool or ``git clone --bare`` gives the two repositories)::

    python tools/gen_k8s_proto.py --api <k8s.io/api git dir> --apimachinery <k8s.io/apimachinery git dir> \\
        [--api-commit HEAD] [--apimachinery-commit HEAD] [-o src/flexq/http/kube/proto_schemas.py]
"""

from __future__ import annotations

import argparse
import contextlib
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

# (apiVersion, kind) the decoder accepts -> proto message (fully qualified)
ROOTS = {
    ("v1", "Pod"): "k8s.io.api.core.v1.Pod",
    ("v1", "Service"): "k8s.io.api.core.v1.Service",
    ("v1", "ConfigMap"): "k8s.io.api.core.v1.ConfigMap",
    ("v1", "Secret"): "k8s.io.api.core.v1.Secret",
    ("v1", "Namespace"): "k8s.io.api.core.v1.Namespace",
    ("v1", "Node"): "k8s.io.api.core.v1.Node",
    ("v1", "Event"): "k8s.io.api.core.v1.Event",
    ("v1", "PodTemplate"): "k8s.io.api.core.v1.PodTemplate",
    ("v1", "ServiceAccount"): "k8s.io.api.core.v1.ServiceAccount",
    ("batch/v1", "Job"): "k8s.io.api.batch.v1.Job",
    ("scheduling.k8s.io/v1", "PriorityClass"): "k8s.io.api.scheduling.v1.PriorityClass",
    ("apps/v1", "Deployment"): "k8s.io.api.apps.v1.Deployment",
    ("apps/v1", "ReplicaSet"): "k8s.io.api.apps.v1.ReplicaSet",
    ("autoscaling/v1", "Scale"): "k8s.io.api.autoscaling.v1.Scale",
    ("rbac.authorization.k8s.io/v1", "Role"): "k8s.io.api.rbac.v1.Role",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "k8s.io.api.rbac.v1.RoleBinding",
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): "k8s.io.api.rbac.v1.ClusterRole",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): "k8s.io.api.rbac.v1.ClusterRoleBinding",
    ("coordination.k8s.io/v1", "Lease"): "k8s.io.api.coordination.v1.Lease",
    # create-only: the review APIs kubectl's auth commands call, and the TokenRequest of `kubectl create token`
    (
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
    ): "k8s.io.api.authorization.v1.SelfSubjectAccessReview",
    (
        "authorization.k8s.io/v1",
        "SelfSubjectRulesReview",
    ): "k8s.io.api.authorization.v1.SelfSubjectRulesReview",
    ("authorization.k8s.io/v1", "SubjectAccessReview"): "k8s.io.api.authorization.v1.SubjectAccessReview",
    (
        "authorization.k8s.io/v1",
        "LocalSubjectAccessReview",
    ): "k8s.io.api.authorization.v1.LocalSubjectAccessReview",
    ("authentication.k8s.io/v1", "SelfSubjectReview"): "k8s.io.api.authentication.v1.SelfSubjectReview",
    ("authentication.k8s.io/v1", "TokenRequest"): "k8s.io.api.authentication.v1.TokenRequest",
    ("authentication.k8s.io/v1", "TokenReview"): "k8s.io.api.authentication.v1.TokenReview",
}
ENVELOPE = "k8s.io.apimachinery.pkg.runtime.Unknown"

# repository -> package directories read from it
PACKAGES = {
    "api": [
        "core/v1",
        "batch/v1",
        "scheduling/v1",
        "scheduling/v1alpha3",
        "apps/v1",
        "rbac/v1",
        "coordination/v1",
        "authorization/v1",
        "authentication/v1",
    ],
    "apimachinery": [
        "pkg/apis/meta/v1",
        "pkg/runtime",
        "pkg/runtime/schema",
        "pkg/util/intstr",
        "pkg/api/resource",
    ],
}

# messages whose Go types marshal by hand; the decoder knows each by this name
SPECIAL = {
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "Quantity",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "IntOrString",
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time": "Time",
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime": "MicroTime",
    "k8s.io.apimachinery.pkg.apis.meta.v1.Duration": "Duration",
    "k8s.io.apimachinery.pkg.runtime.RawExtension": "RawExtension",
    "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1": "FieldsV1",
    # `type ExtraValue []string` and friends: a message of one repeated string, a plain list in JSON
    "k8s.io.api.authorization.v1.ExtraValue": "StringList",
    "k8s.io.api.authentication.v1.ExtraValue": "StringList",
    "k8s.io.api.authentication.v1.AttestationValue": "StringList",
}
SCALARS = {"string", "int32", "int64", "bool", "bytes", "double"}

FIELD_RE = re.compile(r"^\s*(optional|repeated)\s+([.\w]+)\s+(\w+)\s*=\s*(\d+)\s*;")
MAP_RE = re.compile(r"^\s*map<\s*([.\w]+)\s*,\s*([.\w]+)\s*>\s+(\w+)\s*=\s*(\d+)\s*;")
GO_FIELD_RE = re.compile(r"^\t(?:(\w+)\s+)?([^\s`]+)\s+`([^`]*)`")
TAG_RE = re.compile(r'(\w+):"([^"]*)"')


@dataclass
class ProtoField:
    name: str
    number: int
    type: str  # fully qualified message name or a scalar
    repeated: bool = False
    map_key: str | None = None


@dataclass
class GoField:
    json: str
    omitempty: bool
    pointer: bool
    inline: bool


@dataclass
class Message:
    fqn: str
    fields: list[ProtoField] = field(default_factory=list)


def git_show(repo: str, commit: str, path: str) -> str:
    return subprocess.run(
        ["git", "-C", repo, "show", f"{commit}:{path}"], check=True, capture_output=True, text=True
    ).stdout


def resolve(commit: str, repo: str) -> str:
    return subprocess.run(
        ["git", "-C", repo, "rev-parse", commit], check=True, capture_output=True, text=True
    ).stdout.strip()


def parse_proto(text: str) -> dict[str, Message]:
    """``generated.proto`` -> messages by fully qualified name (k8s's files have no nested messages)."""
    package = re.search(r"^package\s+([\w.]+);", text, re.M)
    assert package, "no package line"
    pkg = package.group(1)
    out: dict[str, Message] = {}
    current: Message | None = None
    for line in text.splitlines():
        if line.lstrip().startswith("//"):
            continue
        if m := re.match(r"^message\s+(\w+)\s*{", line):
            current = out.setdefault(f"{pkg}.{m.group(1)}", Message(f"{pkg}.{m.group(1)}"))
        elif line.startswith("}"):
            current = None
        elif current is not None and (m := FIELD_RE.match(line)):
            current.fields.append(
                ProtoField(
                    m.group(3), int(m.group(4)), qualify(m.group(2), pkg), repeated=m.group(1) == "repeated"
                )
            )
        elif current is not None and (m := MAP_RE.match(line)):
            current.fields.append(
                ProtoField(
                    m.group(3), int(m.group(4)), qualify(m.group(2), pkg), map_key=qualify(m.group(1), pkg)
                )
            )
        elif current is not None and line.strip():
            raise SystemExit(f"unparsed line in message {current.fqn}: {line!r}")
    return out


def qualify(typ: str, pkg: str) -> str:
    if typ in SCALARS:
        return typ
    if typ.startswith("."):
        return typ[1:]
    if typ in {"float", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64", "sfixed32", "sfixed64"}:
        raise SystemExit(f"scalar type {typ} is not handled by the decoder")
    return f"{pkg}.{typ}"


def parse_go(text: str, pkg: str) -> dict[str, dict[int, GoField]]:
    """``types.go`` -> struct name (qualified with the proto package) -> protobuf field number -> JSON facts."""
    out: dict[str, dict[int, GoField]] = {}
    current: dict[int, GoField] | None = None
    for line in text.splitlines():
        if m := re.match(r"^type\s+(\w+)\s+struct\s*{", line):
            current = out.setdefault(f"{pkg}.{m.group(1)}", {})
        elif line.startswith("}"):
            current = None
        elif current is not None and (m := GO_FIELD_RE.match(line)):
            gotype, tags = m.group(2), dict(TAG_RE.findall(m.group(3)))
            if "protobuf" not in tags:
                continue  # inline TypeMeta and other fields outside the wire format
            parts = tags["protobuf"].split(",")
            number = int(parts[1])
            json_parts = tags.get("json", "").split(",")
            if json_parts[0] == "-" and len(json_parts) == 1:
                current[number] = GoField("-", False, False, False)  # on the wire, never in JSON
                continue
            inline = m.group(1) is None and json_parts[0] == "" or "inline" in json_parts[1:]
            name = json_parts[0] or (m.group(1) or gotype.lstrip("*").split(".")[-1])
            current[number] = GoField(name, "omitempty" in json_parts[1:], gotype.startswith("*"), inline)
    return out


def load(
    args: argparse.Namespace,
) -> tuple[dict[str, Message], dict[str, dict[int, GoField]], dict[str, str]]:
    repos = {"api": args.api, "apimachinery": args.apimachinery}
    commits = {
        "api": resolve(args.api_commit, args.api),
        "apimachinery": resolve(args.apimachinery_commit, args.apimachinery),
    }
    messages: dict[str, Message] = {}
    gofields: dict[str, dict[int, GoField]] = {}
    for repo, dirs in PACKAGES.items():
        for d in dirs:
            proto = parse_proto(git_show(repos[repo], commits[repo], f"{d}/generated.proto"))
            messages.update(proto)
            pkg = next(iter(proto)).rsplit(".", 1)[0] if proto else ""
            with contextlib.suppress(subprocess.CalledProcessError):  # intstr and resource have no types.go
                gofields.update(parse_go(git_show(repos[repo], commits[repo], f"{d}/types.go"), pkg))
    return messages, gofields, commits


def reachable(messages: dict[str, Message], roots: list[str]) -> list[str]:
    seen: list[str] = []
    todo = list(roots)
    while todo:
        fqn = todo.pop()
        if fqn in seen or fqn in SPECIAL or fqn in SCALARS:
            continue
        if fqn not in messages:
            raise SystemExit(f"message {fqn} is reachable but its package is not read (add it to PACKAGES)")
        seen.append(fqn)
        todo.extend(f.type for f in messages[fqn].fields)
    return sorted(seen, key=lambda f: (f.rsplit(".", 1)[-1], f))


def short_names(fqns: list[str]) -> dict[str, str]:
    names: dict[str, str] = dict(SPECIAL)
    for fqn in fqns:
        short = fqn.rsplit(".", 1)[-1]
        if short in names.values() or short in SCALARS:
            pkg = fqn.rsplit(".", 2)[-2]
            short = f"{fqn.split('.')[-3]}{pkg}.{short}"  # e.g. scheduling v1alpha3 -> schedulingv1alpha3.X
        names[fqn] = short
    return names


def type_expr(f: ProtoField, names: dict[str, str]) -> str:
    base = f.type if f.type in SCALARS else names[f.type]
    if f.map_key is not None:
        return f"map[{f.map_key}]{base}"
    return f"[]{base}" if f.repeated else base


def render(
    messages: dict[str, Message],
    gofields: dict[str, dict[int, GoField]],
    commits: dict[str, str],
    gen: list[str],
) -> str:
    fqns = reachable(messages, [ENVELOPE, *ROOTS.values()])
    names = short_names(fqns)
    lines = [
        '"""Kubernetes protobuf field tables, generated by ``tools/gen_k8s_proto.py``: do not edit by hand.',
        "",
        f"Sources: k8s.io/api {commits['api']},",
        f"k8s.io/apimachinery {commits['apimachinery']}",
        "(``generated.proto`` for numbers and wire types, ``types.go`` for JSON names, omitempty, pointers and",
        "inlined structs). Regenerate with::",
        "",
        *(f"    {g}" for g in gen),
        "",
        "``SCHEMAS``: message -> field number -> (json name, type, flags). Types: ``string``, ``int32``,",
        "``int64``, ``bool``, ``bytes``, ``double``, a message name from ``SCHEMAS``, a special type (``Quantity``,",
        "``IntOrString``, ``Time``, ``MicroTime``, ``Duration``, ``RawExtension``, ``FieldsV1``, ``StringList``), ``[]T``",
        "(repeated) or ``map[string]T``. Flags: ``p`` the Go field is a pointer, ``o`` omitempty, ``i`` the",
        "struct is inlined into its parent's JSON. A json name ``-`` is on the wire but never in JSON.",
        "``KINDS``: (apiVersion, kind) -> message.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        f"API_COMMIT = {commits['api']!r}",
        f"APIMACHINERY_COMMIT = {commits['apimachinery']!r}",
        "",
        "KINDS: dict[tuple[str, str], str] = {",
        *(f"    {key!r}: {names[fqn]!r}," for key, fqn in ROOTS.items()),
        "}",
        "",
        "SCHEMAS: dict[str, dict[int, tuple[str, str, str]]] = {",
    ]
    for fqn in fqns:
        go = gofields.get(fqn)
        if go is None and fqn != ENVELOPE and not fqn.startswith("k8s.io.apimachinery.pkg.runtime."):
            raise SystemExit(f"no Go struct for {fqn}: a non-struct Go type needs a special case")
        entries = []
        for f in sorted(messages[fqn].fields, key=lambda f: f.number):
            g = (go or {}).get(f.number)
            if g is None and go is not None:
                raise SystemExit(f"{fqn}.{f.name} = {f.number} has no protobuf tag in types.go")
            g = g or GoField(f.name, False, False, False)
            flags = ("p" if g.pointer else "") + ("o" if g.omitempty else "") + ("i" if g.inline else "")
            entries.append(f"{f.number}: ({g.json!r}, {type_expr(f, names)!r}, {flags!r})")
        lines.append(f"    {names[fqn]!r}: {{")
        row = "       "
        for e in entries:
            if len(row) + len(e) + 2 > 110:
                lines.append(row.rstrip())
                row = "       "
            row += f" {e},"
        lines.append(row.rstrip())
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--api", required=True, help="git directory of github.com/kubernetes/api")
    p.add_argument(
        "--apimachinery", required=True, help="git directory of github.com/kubernetes/apimachinery"
    )
    p.add_argument("--api-commit", default="HEAD")
    p.add_argument("--apimachinery-commit", default="HEAD")
    p.add_argument("-o", "--output", default="src/flexq/http/kube/proto_schemas.py")
    args = p.parse_args(argv)
    messages, gofields, commits = load(args)
    gen = [
        "python tools/gen_k8s_proto.py --api <dir> --apimachinery <dir> \\",
        f"    --api-commit {commits['api']} \\",
        f"    --apimachinery-commit {commits['apimachinery']}",
    ]
    Path(args.output).write_text(render(messages, gofields, commits, gen))
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
