//! What each directive does: the functions the [table](crate::table) points
//! to, one file per Apache module (or a few modules that share types),
//! named for the module or, where the crate already had the name, as the
//! file below the builder holding that module's types (`auth.rs` here and
//! [`auth`](crate::auth) there) and as its request half in the handler
//! crate. Each file's overview names both. Besides the directives, a file
//! holds its module's checks once everything is read (`settle`) and, for
//! mod_fcgid and mod_php, the mapping of a host onto a pool.
//! [`core`] holds Apache's core directives; [`values`] the value parsers
//! only directives use.
//!
//! These sit above [`Builder`](crate::builder::Builder),
//! [`Settings`](crate::Settings) and [`DirConfig`](crate::DirConfig): they
//! take the builder and fill in the types the lower files define, which
//! import nothing from here. The table, the builder's walk (build.rs) and
//! `.htaccess` reading sit above them.

pub(crate) mod access_compat;
pub(crate) mod alias;
pub(crate) mod auth;
pub(crate) mod authz;
pub(crate) mod autoindex;
pub(crate) mod balancer;
pub(crate) mod cache;
pub(crate) mod cgi;
pub(crate) mod compress;
pub(crate) mod core;
pub(crate) mod env_vars;
pub(crate) mod expires;
pub(crate) mod fcgid;
pub(crate) mod h2;
pub(crate) mod headers;
pub(crate) mod logs;
pub(crate) mod mass;
pub(crate) mod md;
pub(crate) mod mime;
pub(crate) mod mod_dir;
pub(crate) mod mod_php;
pub(crate) mod proxy;
pub(crate) mod proxy_http;
pub(crate) mod remote_ip;
pub(crate) mod rewrite;
pub(crate) mod tls;
pub(crate) mod values;
