"""Drives the API with the vendor's Python SDK, azure-ai-anomalydetector 3.0.0b6, the way a user of
the retired Azure service would, with only the endpoint and key changed.

Input (stdin, JSON): {"endpoint", "key", "wrongKey", "series": {name: [{"timestamp", "value"}]}}
with the series named entire, lastSpike, lastNormal, changePoint and tooShort.
Output (stdout): one JSON object with what the SDK returned or raised for each call. A call that
fails unexpectedly is reported in the output rather than crashing the script, so the calling test
can show exactly which call failed and how.
"""

import json
import sys
from datetime import datetime
from importlib.metadata import version
from typing import Any, Callable, Dict, List

from azure.ai.anomalydetector import AnomalyDetectorClient
from azure.ai.anomalydetector.models import (
    TimeGranularity,
    TimeSeriesPoint,
    UnivariateChangePointDetectionOptions,
    UnivariateDetectionOptions,
)
from azure.core.credentials import AzureKeyCredential
from azure.core.exceptions import HttpResponseError

JSON = Dict[str, Any]


def to_points(raw: List[JSON]) -> List[TimeSeriesPoint]:
    return [
        TimeSeriesPoint(timestamp=datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")), value=p["value"])
        for p in raw
    ]


def with_path(pipeline_response: Any, deserialized: Any, _headers: Any) -> JSON:
    """`cls` hook of the SDK's operations: keep the result and note the URL path it was sent to."""
    path = pipeline_response.http_request.url.split("://", 1)[-1]
    return {"path": path[path.index("/"):], "result": deserialized}


def describe_error(error: Exception) -> JSON:
    described: JSON = {"exception": type(error).__name__, "message": str(error)}
    if isinstance(error, HttpResponseError):
        response = error.response
        described["statusCode"] = error.status_code
        described["code"] = error.error.code if error.error is not None else None
        described["modelCode"] = getattr(error.model, "code", None)
        described["errorCodeHeader"] = response.headers.get("x-ms-error-code") if response is not None else None
    return described


def attempt(call: Callable[[], JSON]) -> JSON:
    try:
        return call()
    except Exception as error:  # noqa: BLE001 - reported to the test, which decides
        return {"failed": describe_error(error)}


def expect_failure(call: Callable[[], Any]) -> JSON:
    try:
        call()
    except Exception as error:  # noqa: BLE001 - the failure is what is being tested
        return describe_error(error)
    return {"exception": None, "message": "the call succeeded"}


def entire(client: AnomalyDetectorClient, points: List[TimeSeriesPoint]) -> JSON:
    options = UnivariateDetectionOptions(series=points, granularity=TimeGranularity.DAILY)
    out = client.detect_univariate_entire_series(options, cls=with_path)
    r = out["result"]
    return {
        "path": out["path"],
        "period": r.period,
        "expectedValues": r.expected_values,
        "upperMargins": r.upper_margins,
        "lowerMargins": r.lower_margins,
        "isAnomaly": r.is_anomaly,
        "isPositiveAnomaly": r.is_positive_anomaly,
        "isNegativeAnomaly": r.is_negative_anomaly,
        "severity": r.severity,
    }


def last(client: AnomalyDetectorClient, points: List[TimeSeriesPoint]) -> JSON:
    options = UnivariateDetectionOptions(series=points, granularity=TimeGranularity.DAILY)
    out = client.detect_univariate_last_point(options, cls=with_path)
    r = out["result"]
    return {
        "path": out["path"],
        "period": r.period,
        "suggestedWindow": r.suggested_window,
        "expectedValue": r.expected_value,
        "upperMargin": r.upper_margin,
        "lowerMargin": r.lower_margin,
        "isAnomaly": r.is_anomaly,
        "isPositiveAnomaly": r.is_positive_anomaly,
        "isNegativeAnomaly": r.is_negative_anomaly,
        "severity": r.severity,
    }


def change_point(client: AnomalyDetectorClient, points: List[TimeSeriesPoint]) -> JSON:
    options = UnivariateChangePointDetectionOptions(series=points, granularity=TimeGranularity.DAILY)
    out = client.detect_univariate_change_point(options, cls=with_path)
    r = out["result"]
    return {
        "path": out["path"],
        "period": r.period,
        "isChangePoint": r.is_change_point,
        "confidenceScores": r.confidence_scores,
    }


def main() -> None:
    request = json.load(sys.stdin)
    series = {name: to_points(raw) for name, raw in request["series"].items()}
    # retry_total=0: a failing server should fail the test at once, not after azure-core's backoff.
    def connect(key: str) -> AnomalyDetectorClient:
        return AnomalyDetectorClient(request["endpoint"], AzureKeyCredential(key), api_version="v1.1", retry_total=0)

    client = connect(request["key"])
    stranger = connect(request["wrongKey"])
    too_short = series["tooShort"]
    report = {
        "sdkVersion": version("azure-ai-anomalydetector"),
        "entire": attempt(lambda: entire(client, series["entire"])),
        "lastSpike": attempt(lambda: last(client, series["lastSpike"])),
        "lastNormal": attempt(lambda: last(client, series["lastNormal"])),
        "changePoint": attempt(lambda: change_point(client, series["changePoint"])),
        "invalidSeries": {
            "entire": expect_failure(lambda: entire(client, too_short)),
            "last": expect_failure(lambda: last(client, too_short)),
            "changePoint": expect_failure(lambda: change_point(client, too_short)),
        },
        "wrongKey": expect_failure(lambda: entire(stranger, series["entire"])),
    }
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
