//! [`Manager`] as the parent's [`ProcessManager`], and [`Manager::make`],
//! the [`warren_pool_api::MakeManager`] the binary hands to the parent.

use std::os::fd::BorrowedFd;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use nix::unistd::Pid;
use warren_config::mass::RuntimeUsers;
use warren_config::PoolConfig;
use warren_pool_api::{ManagerLog, PoolDispatch, ProcessManager, ServerUser};

use super::Manager;

impl Manager {
    /// [`Manager::new`], boxed as the parent holds it.
    pub fn make(pools: &[PoolConfig], server: ServerUser, memory_budget: Option<u64>, pid_file: Option<&Path>, log: Arc<dyn ManagerLog>) -> Result<Box<dyn ProcessManager>, String> {
        Ok(Box::new(Manager::new(pools, server, memory_budget, pid_file, log)?))
    }
}

impl ProcessManager for Manager {
    fn start(&mut self) {
        Manager::start(self);
    }

    fn reload(&mut self, pools: &[PoolConfig], server: ServerUser, memory_budget: Option<u64>) -> Result<(), String> {
        Manager::reload(self, pools, server, memory_budget)
    }

    fn set_user_pools(&mut self, users: Option<RuntimeUsers>) {
        Manager::set_user_pools(self, users);
    }

    fn set_log(&mut self, log: Arc<dyn ManagerLog>) {
        Manager::set_log(self, log);
    }

    fn dispatch(&self) -> Arc<dyn PoolDispatch> {
        Manager::dispatch(self)
    }

    fn wake_fd(&self) -> BorrowedFd<'_> {
        Manager::wake_fd(self)
    }

    fn wake(&mut self) {
        Manager::wake(self);
    }

    fn maintain(&mut self) {
        Manager::maintain(self);
    }

    fn output_fds(&self) -> Vec<BorrowedFd<'_>> {
        Manager::output_fds(self)
    }

    fn drain_output(&mut self) {
        Manager::drain_output(self);
    }

    fn close_output_in_child(&mut self) {
        Manager::close_output_in_child(self);
    }

    fn reaped(&mut self, pid: i32, how: &str) -> bool {
        Manager::reaped(self, Pid::from_raw(pid), how)
    }

    fn previous_generation_gone(&mut self) {
        Manager::previous_generation_gone(self);
    }

    fn describe(&self) -> String {
        Manager::describe(self)
    }

    fn stop(&mut self, wait: Duration) {
        Manager::stop(self, wait);
    }
}
