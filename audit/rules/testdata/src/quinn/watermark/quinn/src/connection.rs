// shape of quinn's Rebind: every connection hears local_address_changed
impl State {
    fn process_conn_events(&mut self) {
        match event {
            ConnectionEvent::Rebind(socket) => {
                self.inner.local_address_changed();
            }
        }
    }
}
