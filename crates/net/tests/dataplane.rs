//! The real dataplane against this machine's kernel: a VXLAN device of the test's own
//! (its own name, VNI and port, on the loopback address), driven to a desired state and
//! read back. Needs root; skipped otherwise.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::Ipv4Addr;

use net::dataplane::{Dataplane, Kernel, VxlanSpec};
use net::overlay::{Mac, Peer, Subnet, desired, diff};

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

#[tokio::test]
async fn kernel_device_converges_to_the_desired_state() {
    if !is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    let name = format!("rkt{}", std::process::id() % 100_000);
    let spec = VxlanSpec {
        name: name.clone(),
        vni: 4000 + std::process::id() % 1000,
        port: 20000 + (std::process::id() % 10_000) as u16,
        local: Ipv4Addr::LOCALHOST,
    };
    let kernel = Kernel::connect().unwrap();
    struct Cleanup(String);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            let _ = std::process::Command::new("ip")
                .args(["link", "del", &self.0])
                .status();
        }
    }
    let _cleanup = Cleanup(name.clone());

    let vtep = kernel.ensure_device(&spec).await.unwrap();
    assert_eq!(
        vtep.mtu,
        65536 - 50,
        "loopback's MTU less the VXLAN overhead"
    );
    assert_eq!(
        kernel.ensure_device(&spec).await.unwrap().mac,
        vtep.mac,
        "idempotent"
    );
    assert!(
        kernel
            .local_addresses()
            .await
            .unwrap()
            .contains(&Ipv4Addr::LOCALHOST)
    );

    let local = Subnet::parse("10.251.0.0/24").unwrap();
    let peer = |n: u8, mac: u8, host: u8| Peer {
        node: format!("n{n}"),
        subnet: Subnet::parse(&format!("10.251.{n}.0/24")).unwrap(),
        public_ip: Ipv4Addr::new(192, 0, 2, host),
        mac: Mac([2, 0, 0, 0, 0, mac]),
    };
    let mut want = desired(local, &[peer(1, 1, 1), peer(2, 2, 2)]);
    for round in 0..2 {
        let current = kernel.device_state(&name).await.unwrap();
        for c in diff(&current, &want) {
            kernel.apply(&name, &c).await.unwrap();
        }
        let now = kernel.device_state(&name).await.unwrap();
        assert_eq!(now, want, "round {round}");
        assert!(diff(&now, &want).is_empty());
        // Peer 2 moves to another host with a new MAC; peer 1 leaves.
        want = desired(local, &[peer(2, 0x22, 3)]);
    }

    // A changed spec recreates the device (empty again).
    let moved = VxlanSpec {
        port: spec.port + 1,
        ..spec.clone()
    };
    kernel.ensure_device(&moved).await.unwrap();
    assert_eq!(
        kernel.device_state(&name).await.unwrap(),
        Default::default()
    );
    kernel.delete_device(&name).await.unwrap();
    kernel.delete_device(&name).await.unwrap();
}
