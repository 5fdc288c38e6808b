// Manager::handle_connection_migration renamed.
impl<Config: endpoint::Config> Manager<Config> {
    fn on_new_peer_address(&mut self, path_handle: &Config::PathHandle) -> Result<Id, DatagramDropReason> {
        Ok(Id::new(0))
    }
}
