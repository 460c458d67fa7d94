"""HTTP endpoints of a node: /metrics (Prometheus), /healthz, /readyz, /status."""
