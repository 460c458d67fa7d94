"""metaquorum_operator: the Kubernetes operator that runs metaquorum KRaft quorums.

Layout: `model` (the MetadataQuorum spec and derived names), `builders` (pure manifests),
`planner` (pure: desired + observed + quorum -> next single action), `status` (pure status and
conditions), `kube` (Kubernetes IO), `handlers` (kopf wiring). docs/operator.md is the guide.
"""

__version__ = "0.1.0"
