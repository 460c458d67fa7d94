"""The systems of the side-by-side benchmark, each installed and started by our own code:
ours (metaquorum), etcd, Kafka's TestRaftServer and PySyncObj; 3 members on loopback each."""
