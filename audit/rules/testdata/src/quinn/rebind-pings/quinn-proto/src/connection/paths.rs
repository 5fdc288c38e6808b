// shape of PathData before 0.11: the caller passes the initial RTT and a built controller
impl PathData {
    pub(super) fn new(remote: SocketAddr, initial_rtt: Duration, congestion: Box<dyn congestion::Controller>, now: Instant, validated: bool) -> Self {
        Self {
            remote,
            rtt: RttEstimator::new(initial_rtt),
            congestion,
        }
    }

    pub(super) fn from_previous(remote: SocketAddr, prev: &Self, now: Instant) -> Self {
        Self {
            remote,
            rtt: prev.rtt,
            congestion: prev.congestion.clone_box(),
        }
    }
}
