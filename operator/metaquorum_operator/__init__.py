"""metaquorum_operator: the Kubernetes operator that runs metaquorum KRaft quorums.

Layout: `model` (the MetadataQuorum spec and derived names), `builders` (pure manifests;
`node_config`: server.properties and the format script), `planner` (pure: desired + observed +
quorum -> next single action; `desired`: the owned objects, rule 1), `status` (pure status and
conditions), `kube` (Kubernetes IO), `handlers` (kopf wiring). docs/operator.md is the guide.
"""

__version__ = "0.1.0"
