//! Table conversion: the columns `kubectl get` prints, computed on the server.
