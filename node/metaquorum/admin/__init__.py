"""Admin client over the Kafka wire protocol (DescribeCluster, DescribeQuorum), as Kafka's
`Admin` with `bootstrap.controllers` (KIP-919), and the describe output layouts."""
