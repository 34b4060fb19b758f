//! What each directive does: the functions the [table](crate::table) points
//! to, one file per Apache module (or group of modules), named as the file
//! holding that module's types below the builder and, where it has one, as
//! its request half in the handler crate (`warren_handler::NAME`). Each
//! file's overview names both.
//!
//! These sit above [`Builder`](crate::builder::Builder),
//! [`Settings`](crate::Settings) and [`DirConfig`](crate::DirConfig): they
//! take the builder and fill in the types the lower files define, which
//! import nothing from here.

pub(crate) mod access_compat;
pub(crate) mod auth;
pub(crate) mod cache;
pub(crate) mod cgi;
pub(crate) mod compress;
pub(crate) mod mime;
pub(crate) mod remote_ip;
pub(crate) mod balancer;
pub(crate) mod proxy_http;
pub(crate) mod h2;
pub(crate) mod md;
pub(crate) mod tls;
pub(crate) mod values;
pub(crate) mod fcgid;
pub(crate) mod mod_php;
pub(crate) mod mass;
pub(crate) mod rewrite;
pub(crate) mod core;
pub(crate) mod alias;
pub(crate) mod authz;
pub(crate) mod env_vars;
pub(crate) mod expires;
pub(crate) mod headers;
pub(crate) mod logs;
pub(crate) mod proxy;
pub(crate) mod autoindex;
pub(crate) mod mod_dir;
