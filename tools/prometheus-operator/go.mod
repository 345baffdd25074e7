// Module prometheusoperator pins the Prometheus Operator whose CRDs
// (PodMonitor, PrometheusRule) the manifests of cluster/monitoring/ are
// applied against in the tests. Nothing is built from it: the tests read
// the CRDs from the module's example/prometheus-operator-crd/ folder,
// fetched through the Go module proxy.
module github.com/ayatori/provider-postgresql/tools/prometheus-operator

go 1.25.11

require github.com/prometheus-operator/prometheus-operator v0.88.0
