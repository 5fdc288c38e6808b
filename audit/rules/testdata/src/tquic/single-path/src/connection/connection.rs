// The shape of tquic's connection: one active path unless multipath.
impl Connection {
    fn recv_frame(&mut self, frame: Frame, path_id: usize, now: Instant) -> Result<()> {
        match frame {
            Frame::Ack { ack_delay, ack_ranges, .. } => {
                let path = self.paths.get_mut(path_id)?;
                let (lost_pkts, lost_bytes) = path.recovery.on_ack_received(
                    &ack_ranges, ack_delay, space_id, &mut self.spaces, now)?;
            }
            _ => {}
        }
        Ok(())
    }

    fn select_send_path(&mut self) -> Result<usize> {
        if self.flags.contains(EnableMultipath) {
            if let Ok(pid) = self.scheduler.on_select(&mut self.paths) {
                return Ok(pid);
            }
        }
        // Select the active path
        self.paths.get_active_path_id()
    }

    fn get_or_create_path(&mut self, local: SocketAddr, remote: SocketAddr) -> Result<usize> {
        if let Some(pid) = self.paths.get_path_id(&(local, remote)) {
            return Ok(pid);
        }
        let path = path::Path::new(local, remote, false, &self.recovery_conf, &self.trace_id);
        self.paths.insert_path(path)
    }

    /// Migrate the connection to the given path.
    pub fn migrate_path(&mut self, local_addr: SocketAddr, remote_addr: SocketAddr) -> Result<()> {
        // TODO: support migration
        Err(Error::InternalError)
    }
}
