const INITIAL_RTT: Duration = Duration::from_millis(333);
