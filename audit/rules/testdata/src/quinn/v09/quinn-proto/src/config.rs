// Shape of quinn-proto 0.9: TransportConfig lives in config.rs.
pub struct TransportConfig {
    pub(crate) initial_rtt: Duration,
    pub(crate) congestion_controller_factory: Box<dyn congestion::ControllerFactory + Send + Sync>,
}

impl Default for TransportConfig {
    fn default() -> Self {
        Self {
            initial_rtt: Duration::from_millis(333),
            congestion_controller_factory: Box::new(Arc::new(congestion::CubicConfig::default())),
        }
    }
}
