//! SASL settings checked at startup, without showing passwords.

use crate::support;

use support::Gateway;

#[test]
fn sasl_settings_are_checked_at_startup_without_showing_passwords() {
    // A process: refused starts, with exit codes and stderr.
    let mut gw = Gateway::process();
    let (code, stderr) = gw.refused_restart_with(&[("sasl_plain_backend", "iggy")]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("sasl_plain_backend"), "{stderr}");
    let (code, stderr) =
        gw.refused_restart_with(&[("sasl_scram_users", "alice:very-secret,broken")]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("sasl_scram_users") && stderr.contains("entry 2"),
        "{stderr}"
    );
    assert!(!stderr.contains("very-secret"), "{stderr}");
    let (code, stderr) = gw.refused_restart_with(&[("sasl_enabled_mechanisms", "PLAIN,GSSAPI")]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("GSSAPI"), "{stderr}");
}
