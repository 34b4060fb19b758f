//! The graceful restart (HUP): the configuration read again, kept if it
//! has errors; the new generation of children; the PidFile moved where
//! the new configuration says; and the logs reopened (USR1).

use super::*;

impl Parent {
    pub(super) fn graceful_restart(&mut self, signals: &Signals) {
        let Some(reload) = &self.reload else {
            self.log(LogLevel::Warn, "SIGHUP: no configuration file to re-read (warren serve); ignoring");
            return;
        };
        let (settings, warnings) = match reload() {
            Ok(s) => s,
            Err(errors) => {
                for e in &errors {
                    self.log(LogLevel::Error, &format!("graceful restart: {e}"));
                }
                self.log(LogLevel::Error, "configuration has errors; graceful restart refused, still serving with the running configuration");
                return;
            }
        };
        let old = &self.site.settings;
        if settings.mpm != old.mpm || settings.tuning.server_limit != old.tuning.server_limit || settings.tuning.thread_limit != old.tuning.thread_limit {
            self.log(LogLevel::Error, "graceful restart: changing the MPM, ServerLimit or ThreadLimit needs a full stop and start; still serving with the running configuration");
            return;
        }
        // New certificates (a renewal's deploy hook runs `warren -k
        // graceful`); a broken one keeps the running ones.
        let tls = match warren_tls::ServerTls::new(&settings) {
            Ok(t) => t,
            Err(errors) => {
                for e in &errors {
                    self.log(LogLevel::Error, &format!("graceful restart: {e}"));
                }
                self.log(LogLevel::Error, "TLS certificates or keys have errors; graceful restart refused, still serving with the running configuration and certificates");
                return;
            }
        };
        let mut listeners = Vec::new();
        for addr in &settings.listen {
            let existing = self
                .listeners
                .iter()
                .find(|l| l.addr == *addr || (addr.port() == 0 && l.addr.ip() == addr.ip()))
                .or_else(|| self.activated.iter().find(|l| activation::serves(*addr, l.addr)));
            let l = match existing {
                Some(l) => l.try_clone(),
                None => listen::bind(*addr, settings.listen_backlog),
            };
            match l {
                Ok(mut l) => {
                    l.tls = tls.as_ref().and_then(|t| t.for_listener(*addr));
                    l.h2 = Some(settings.h2_listener(*addr)).filter(|h| h.any()).map(Arc::new);
                    listeners.push(l);
                }
                Err(e) => {
                    self.log(LogLevel::Error, &format!("graceful restart: {e}; still serving with the running configuration"));
                    return;
                }
            }
        }
        // The new logs (a file refused keeps the running configuration, and
        // with it the files it has open), before anything changes.
        let site = match Site::new(settings) {
            Ok(s) => s,
            Err(e) => {
                self.log(LogLevel::Error, &format!("graceful restart: {e}; still serving with the running configuration"));
                return;
            }
        };
        let settings = &site.settings;
        // Pools first: a changed pool's new children start before the new
        // server children can send them requests.
        let pools_result = match self.pools.as_mut() {
            Some(m) => m.reload(&settings.pools, server_user(settings), settings.memory_budget),
            None if settings.pools.is_empty() => Ok(()),
            None => {
                (self.make_manager)(&settings.pools, server_user(settings), settings.memory_budget, settings.pid_file.as_deref(), self.site.error_log.clone()).map(|mut m| {
                    m.start();
                    self.pools = Some(m);
                })
            }
        };
        if let Err(e) = pools_result {
            self.log(LogLevel::Error, &format!("graceful restart: {e}; still serving with the running configuration"));
            return;
        }
        let site = Arc::new(site);
        attach_scoreboard(&site, &self.sb);
        if let Some(m) = self.pools.as_mut() {
            m.set_user_pools(warren_config::mass::RuntimeUsers::of(&site.settings));
            let _ = site.pools.set(m.dispatch());
            // The pools log where the new configuration says, and into the
            // files the next USR1 reopens.
            m.set_log(site.error_log.clone());
        }
        for w in warnings.iter().chain(tls.as_ref().map_or(&[][..], |t| t.warnings())) {
            site.error_log.log(LogLevel::Warn, None, w);
        }
        if site.settings.tuning.max_request_workers_auto != self.site.settings.tuning.max_request_workers_auto || site.settings.memory_budget != self.site.settings.memory_budget {
            self.worker_budget = worker_budget(&site.settings);
        }
        self.site = site;
        self.listeners = listeners;
        self.move_pid_file();
        self.log(LogLevel::Notice, "SIGHUP received: graceful restart, new children take new connections");
        self.new_generation(signals);
    }

    /// After a graceful restart that names another PidFile: the new one is
    /// written, then the old one removed. One that cannot be written leaves
    /// the old one in place.
    fn move_pid_file(&mut self) {
        let wanted = self.site.settings.pid_file.as_ref();
        if wanted == self.pid_file.as_ref().map(|(p, _)| p) {
            return;
        }
        let written = match wanted {
            Some(p) => match write_pid_file(p, self.site.settings.pid_file_origin.as_ref()) {
                Ok(f) => Some((p.clone(), f)),
                Err(e) => return self.log(LogLevel::Error, &format!("graceful restart: {e}; the PidFile stays where it was")),
            },
            None => None,
        };
        if let Some((p, f)) = std::mem::replace(&mut self.pid_file, written) {
            root_files::remove_if_same(&p, &f);
        }
    }

    /// The running children are asked to finish what they are doing and
    /// exit; a new generation, forked from the parent as it is now, takes
    /// new connections.
    fn new_generation(&mut self, signals: &Signals) {
        // A prefork child's kept-alive client comes back on a new connection
        // once its child has finished: the new generation starts as large as
        // the old one was, rather than ramping up from StartServers.
        let start = match self.site.settings.mpm {
            Mpm::Prefork => (self.site.settings.tuning.start_servers as usize).max(self.active()).min(self.max_children()),
            _ => self.site.settings.tuning.start_servers as usize,
        };
        let old_children: Vec<Pid> = self.children.keys().copied().collect();
        for pid in old_children {
            self.ask_to_stop(pid);
        }
        self.generation += 1;
        self.sb.set_generation(self.generation);
        self.cap_logged = false;
        for _ in 0..start {
            self.spawn(signals);
        }
    }

    /// USR1, after log rotation: the parent reopens the log files. Children
    /// that run as warren's own user reopen theirs too. Children that became
    /// `User` cannot open root's log files (nor should they be able to): they
    /// are replaced, gracefully, by children forked with the files the
    /// parent just opened, as Apache's graceful restart does.
    pub(super) fn reopen_logs(&mut self, signals: &Signals) {
        self.site.reopen_logs();
        let changes_user = matches!(
            warren_config::accounts::server_account(self.site.settings.user.as_deref(), self.site.settings.group.as_deref()),
            Ok(Some(a)) if a.uid != nix::unistd::Uid::effective() || a.gid != nix::unistd::Gid::effective()
        );
        if changes_user {
            self.log(LogLevel::Notice, "SIGUSR1 received: logs reopened; children replaced gracefully (they run as User and cannot reopen the logs)");
            self.new_generation(signals);
        } else {
            self.logs_reopened = self.logs_reopened.wrapping_add(1);
            self.sb.set_logs_reopened(self.logs_reopened);
            for pid in self.children.keys() {
                let _ = kill(*pid, Signal::SIGUSR1);
            }
        }
    }
}
