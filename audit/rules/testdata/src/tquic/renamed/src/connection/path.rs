// Path::on_path_resp_received renamed.
impl Path {
    pub fn on_response(&mut self, data: [u8; 8]) -> bool {
        true
    }
}
