"""Prometheus' HTTP query API, for the tests that read back what it stored
(test_prometheus.sh, test_monitor_prometheus.sh): run their Python with
PYTHONPATH=tests/integration."""
import json
import urllib.parse
import urllib.request


def answer(prom, q):
    """Prometheus' whole answer to instant query q (prom: host:port)."""
    url = "http://%s/api/v1/query?%s" % (prom, urllib.parse.urlencode({"query": q}))
    with urllib.request.urlopen(url, timeout=5) as f:
        return json.load(f)


def query(prom, q):
    """The result of instant query q, which must succeed."""
    d = answer(prom, q)
    assert d["status"] == "success", d
    return d["data"]["result"]
