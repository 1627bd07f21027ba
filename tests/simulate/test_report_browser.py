"""The HTML report opens in headless Chromium (Debian's chromium + chromedriver, through selenium) and shows
its plots: every <img> has loaded (naturalWidth > 0); a screenshot is taken."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import flexq

CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


@pytest.mark.skipif(
    not (Path(CHROMIUM).exists() and Path(DRIVER).exists()) and not shutil.which("chromium"),
    reason="Debian's chromium and chromium-driver are not installed",
)
def test_report_renders_its_plots_in_headless_chromium(study_dir, tmp_path) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    study = study_dir(
        {
            "name": "browser",
            "seed": 2,
            "generator": {
                "count": 40,
                "arrivals": {"exponential": {"mean": 60}},
                "mix": [
                    {
                        "kind": "Workload",
                        "podsets": "main:1:cpu=1",
                        "queue": "q",
                        "run": {"exponential": {"mean": 100}},
                    }
                ],
            },
            "variants": [{"name": "a"}, {"name": "b"}],
        },
        quota=2,
    )
    out = tmp_path / "out"
    result = flexq.simulate(study, out=out, workers=1)
    report = out / "report.html"
    assert report in result.files and (out / "wait-cdf.png").stat().st_size > 1000
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1200,2400",
    ):
        opts.add_argument(arg)
    driver = webdriver.Chrome(
        service=Service(DRIVER if Path(DRIVER).exists() else shutil.which("chromedriver")), options=opts
    )
    try:
        driver.get(report.as_uri())
        widths = driver.execute_script(
            "return Array.from(document.images).map(i => i.complete ? i.naturalWidth : 0);"
        )
        # outcomes, wait split, wait CDF, a timeline per variant, cumulative cost
        assert len(widths) == 6 and all(w > 0 for w in widths), widths
        assert "flexq simulate: browser" in driver.title
        shot = tmp_path / "report.png"
        assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    finally:
        driver.quit()


@pytest.mark.skipif(
    not (Path(CHROMIUM).exists() and Path(DRIVER).exists()) and not shutil.which("chromium"),
    reason="Debian's chromium and chromium-driver are not installed",
)
def test_sweep_report_shows_headline_lost_jobs_wait_split_and_pareto(tmp_path) -> None:
    """The sweep's report: the headline sentence, the lost-jobs table (the base loses jobs), the wait-split plot
    and the Pareto plot, every image loaded; a screenshot of it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    from flexq.simulate import load_study, run_sweep

    study = tmp_path / "lost"
    shutil.copytree(Path(__file__).with_name("data") / "lost", study)
    out = tmp_path / "out"
    run_sweep(
        load_study(study),
        {"base": "dws-tight", "knobs": [{"kind": "poolMax", "pool": "dws-pool", "values": [2, 8]}]},
        out=out,
        workers=1,
    )
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1300,3000",
    ):
        opts.add_argument(arg)
    driver = webdriver.Chrome(
        service=Service(DRIVER if Path(DRIVER).exists() else shutil.which("chromedriver")), options=opts
    )
    try:
        driver.get((out / "report.html").as_uri())
        # one headline: the sweep's (the variants' comparison does not compete with it)
        (box,) = driver.find_elements(By.CSS_SELECTOR, "p.headline")
        assert "points" in box.text and "around base-dws-tight" in box.text and "loses" in box.text
        assert "kubectl apply -f best.yaml" in driver.find_element(By.ID, "best-yaml").text
        lost_rows = driver.find_elements(By.CSS_SELECTOR, "table.lost tr")
        assert len(lost_rows) >= 2 and "DeactivatedDueToAdmissionCheck" in lost_rows[1].text
        assert "NodepoolSizeReached" in lost_rows[1].text
        loaded = driver.execute_script(
            "return Object.fromEntries(Array.from(document.images).map(i => [i.alt, i.complete ? i.naturalWidth : 0]));"
        )
        assert (
            loaded.get("pareto", 0) > 0 and loaded.get("wait-split", 0) > 0 and loaded.get("outcomes", 0) > 0
        ), loaded
        assert all(w > 0 for w in loaded.values()), loaded
        assert "max" in driver.find_element(By.ID, "best-diff").text
        shot = tmp_path / "sweep-report.png"
        assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    finally:
        driver.quit()
