const INITIAL_RTT: Duration = Duration::from_millis(333);

const MINIMUM_WINDOW_PACKETS: usize = 2;

const LOSS_REDUCTION_FACTOR: f64 = 0.5;

pub trait RecoveryOps {
    /// Called when the connection migrates to a new path.
    fn on_connection_migration(&mut self);
}

impl RecoveryOps for Recovery {
    fn on_connection_migration(&mut self) {}
}
