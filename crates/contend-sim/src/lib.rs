//! contend-sim
