// shape of s2n-quic-core's path module before mtu.rs
pub const MINIMUM_MTU: u16 = 1200;
