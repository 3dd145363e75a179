//! End-to-end tests live in `tests/`: each starts real processes (`rkube server`, etcd)
//! through `testkit` and drives them with the real kubectl.
