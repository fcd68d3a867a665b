"""`rooftop check --junit FILE`: JUnit XML for CI systems, one test case
per ceiling (classname rooftop.METRIC, name the ceiling), a failure for a
ceiling that fell beyond noise; a metric with no comparable baseline is a
skipped test case saying why."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from rooftop.history.check import MetricCheck


def document(checks: list[MetricCheck], skipped: dict[str, str]) -> str:
    """The XML text: one testsuite named after the run."""
    cases = [(mc, c) for mc in checks for c in mc.changes]
    run = checks[0].run if checks else ""
    suite = ET.Element(
        "testsuite",
        name=f"rooftop check {run}".strip(),
        tests=str(len(cases) + len(skipped)),
        failures=str(sum(c.fell for _, c in cases)),
        skipped=str(len(skipped)),
        errors="0",
    )
    for mc, c in cases:
        tc = ET.SubElement(suite, "testcase", classname=f"rooftop.{c.metric}", name=c.ceiling, time="0")
        if c.fell:
            fail = ET.SubElement(tc, "failure", message=c.text(), type="CeilingFell")
            fail.text = f"against {mc.against}\n{mc.bound_moved()}"
        else:
            out = ET.SubElement(tc, "system-out")
            out.text = f"{c.text()} (against {mc.against})"
    for metric, why in skipped.items():
        tc = ET.SubElement(suite, "testcase", classname=f"rooftop.{metric}", name="comparable baseline", time="0")
        ET.SubElement(tc, "skipped", message=why)
    ET.indent(suite)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
