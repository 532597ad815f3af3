//! contend-workload
