// before connection migration: one Recovery per connection, no path.rs
pub struct Connection {
    recovery: recovery::Recovery,
}

impl Connection {
    fn process_frame(&mut self, frame: frame::Frame) -> Result<()> {
        match frame {
            frame::Frame::PathResponse { .. } => (),
        }
        Ok(())
    }
}
