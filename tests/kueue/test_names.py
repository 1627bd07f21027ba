"""Names Kueue generates, against the expectations of Kueue's own tests."""

from __future__ import annotations

import pytest

from flexq.kueue.jobframework import workload_name
from flexq.kueue.provisioning_names import request_name, template_name

LONG = (
    "marketing-campaign-autumn-2024-region-north-america-department-digital-strategy-sub-department-social-"
    "media-engagement-tracker-and-analytics-dashboard-v2-final-revision-by-engineering-team-lead-senior-"
    "architect-validation-checked-approved-by-legal-and-ops-dept"
)


@pytest.mark.parametrize(
    ("name", "extra", "want"),
    [
        ("name", "", "job-name-ef3a1"),
        ("name", "1", "job-name-2514c"),
        (
            LONG,
            "",
            "job-marketing-campaign-autumn-2024-region-north-america-department-digital-strategy-sub-department-"
            "social-media-engagement-tracker-and-analytics-dashboard-v2-final-revision-by-engineering-team-lead-"
            "senior-architect-validation-checked-approved-by-l-218b8",
        ),
    ],
    ids=["short", "with extra", "long owner name truncated"],
)
def test_workload_names_match_kueue(name: str, extra: str, want: str) -> None:
    # pkg/controller/jobframework/workload_names_test.go (ShortWorkloadNames=false, the default)
    assert workload_name("Job", "batch", name, "uid", extra) == want


def test_provisioning_request_and_template_names() -> None:
    # pkg/controller/admissionchecks/provisioning/provisioning.go ProvisioningRequestName, podTemplatesPrefix "ppt"
    assert request_name("rayjob-x-abcde", "dws-prov", 3) == "rayjob-x-abcde-dws-prov-3"
    assert (
        template_name("rayjob-x-abcde-dws-prov-3", "tpu-group") == "ppt-rayjob-x-abcde-dws-prov-3-tpu-group"
    )
    assert request_name("w" * 230, "check", 1) == "w" * 230 + "-check-1"  # 238 characters: kept
    # v0.19.2 (limitObjectName over the whole name): 248 characters cut to 247 + "-" + 5 hex
    long = request_name("w" * 240, "check", 1, stable=False)
    assert len(long) == 253 and long[:247] == ("w" * 240 + "-check-1")[:247] and long[247] == "-"
    # 0.20 (kueue#14916): the prefix is cut leaving room for a 10-digit attempt, then the attempt follows
    fixed = request_name("w" * 240, "check", 1)
    assert len(fixed) == 244 and fixed.endswith("-1") and fixed[:236] == "w" * 236 and fixed[236] == "-"
    assert request_name("w" * 240, "check", 2147483647).startswith(fixed[:-1])
    assert len(request_name("w" * 240, "check", 2147483647)) == 253
