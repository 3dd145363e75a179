//! The node's end of the inter-host pod network ([`net::overlay`]): the VXLAN device set
//! up before the node registers (so the pods' MTU leaves room for the encapsulation),
//! the node's VTEP MAC published in its Node annotations, and a loop over a watch of all
//! Nodes keeping one route, neighbour entry and FDB entry per peer node, plus the
//! packet-filter rules that keep pod-to-pod traffic between nodes un-NATed.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use net::dataplane::{Dataplane, Vtep, VxlanSpec};
use net::overlay::{self, Subnet};
use tokio::sync::watch;

use crate::Error;

/// How often the device is compared with the desired state even without Node changes
/// (someone may have removed a route by hand).
const RESYNC: Duration = Duration::from_secs(60);

/// The overlay of one node.
pub struct Overlay {
    pub node: String,
    pub spec: VxlanSpec,
    /// Names this node's packet-filter chains (see [`net::dataplane::chain_names`]).
    pub rules_id: String,
    pub dataplane: Arc<dyn Dataplane>,
}

/// The device of a node whose address is `node_ip`.
pub fn vxlan_spec(node_ip: Ipv4Addr) -> VxlanSpec {
    VxlanSpec {
        name: overlay::DEVICE.to_string(),
        vni: overlay::VNI,
        port: overlay::PORT,
        local: node_ip,
    }
}

/// The annotations this node publishes.
fn annotations(vtep: &Vtep, node_ip: Ipv4Addr) -> BTreeMap<String, String> {
    BTreeMap::from([
        (overlay::MAC_ANNOTATION.to_string(), vtep.mac.to_string()),
        (
            overlay::PUBLIC_IP_ANNOTATION.to_string(),
            node_ip.to_string(),
        ),
    ])
}

/// The merge patch publishing `want` on `node`, if its annotations differ (pure).
pub fn annotation_patch(node: &Node, want: &BTreeMap<String, String>) -> Option<serde_json::Value> {
    let have = node.metadata.annotations.as_ref();
    let missing = want
        .iter()
        .any(|(k, v)| have.and_then(|h| h.get(k)) != Some(v));
    missing.then(|| serde_json::json!({"metadata": {"annotations": want}}))
}

impl Overlay {
    /// Sets the device up; its MTU is what the node's pods should use.
    pub async fn prepare(&self) -> Result<Vtep, Error> {
        self.dataplane
            .ensure_device(&self.spec)
            .await
            .map_err(|e| Error::Other(format!("overlay: {e}")))
    }

    /// One pass: publish the annotations, then bring the device and rules to what the
    /// Nodes in `nodes` call for. Returns the peers' subnets the rules were set for.
    pub async fn reconcile(
        &self,
        client: &kube::Client,
        vtep: &Vtep,
        nodes: &[Arc<Node>],
        rules: &mut Option<(Subnet, Vec<Subnet>)>,
    ) -> Result<(), Error> {
        let err = |e: net::Error| Error::Other(format!("overlay: {e}"));
        let Some(me) = nodes
            .iter()
            .find(|n| n.metadata.name.as_deref() == Some(self.node.as_str()))
        else {
            return Ok(());
        };
        if let Some(patch) = annotation_patch(me, &annotations(vtep, self.spec.local)) {
            let api: kube::Api<Node> = kube::Api::all(client.clone());
            api.patch(
                &self.node,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&patch),
            )
            .await?;
            tracing::info!(mac = %vtep.mac, "VTEP published");
        }
        let Some(local) = overlay::pod_subnet(me) else {
            return Ok(());
        };
        // The device may have been removed (or recreated) behind our back.
        self.dataplane
            .ensure_device(&self.spec)
            .await
            .map_err(err)?;
        let here = self.dataplane.local_addresses().await.map_err(err)?;
        let peers = overlay::peers(&self.node, nodes.iter().map(|n| &**n), &here);
        let want = overlay::desired(local, &peers);
        let current = self
            .dataplane
            .device_state(&self.spec.name)
            .await
            .map_err(err)?;
        for change in overlay::diff(&current, &want) {
            tracing::debug!(?change, "overlay change");
            self.dataplane
                .apply(&self.spec.name, &change)
                .await
                .map_err(err)?;
        }
        let subnets: Vec<Subnet> = peers.iter().map(|p| p.subnet).collect();
        if rules.as_ref() != Some(&(local, subnets.clone())) {
            self.dataplane
                .set_filter_rules(&self.rules_id, local, &subnets)
                .await
                .map_err(err)?;
            tracing::info!(pod_subnet = %local, peers = peers.len(), "overlay routes and rules set");
            *rules = Some((local, subnets));
        }
        Ok(())
    }

    /// Keeps the overlay current until `stop` turns true: a watch of all Nodes, a pass
    /// after each burst of changes and every [`RESYNC`]; failed passes are retried.
    pub async fn run(
        self,
        client: kube::Client,
        vtep: Vtep,
        mut stop: watch::Receiver<bool>,
    ) -> Result<(), Error> {
        let span = tracing::info_span!("overlay", node = %self.node);
        let (reader, writer) = reflector::store::<Node>();
        let api: kube::Api<Node> = kube::Api::all(client.clone());
        let stream = watcher(api, watcher::Config::default())
            .default_backoff()
            .reflect(writer)
            .touched_objects();
        futures::pin_mut!(stream);
        let mut rules = None;
        let mut dirty = true;
        let mut resync = tokio::time::interval(RESYNC);
        let mut tick = tokio::time::interval(Duration::from_millis(200));
        loop {
            tokio::select! {
                next = stream.next() => match next {
                    Some(_) => dirty = true,
                    None => return Ok(()),
                },
                _ = resync.tick() => dirty = true,
                _ = tick.tick() => {
                    if dirty && reader_ready(&reader) {
                        let nodes = reader.state();
                        let pass = self.reconcile(&client, &vtep, &nodes, &mut rules);
                        match tracing::Instrument::instrument(pass, span.clone()).await {
                            Ok(()) => dirty = false,
                            Err(e) => {
                                tracing::warn!(parent: &span, error = %e, "overlay pass failed; retrying");
                                tokio::time::sleep(Duration::from_secs(1)).await;
                            }
                        }
                    }
                }
                _ = async { let _ = stop.wait_for(|s| *s).await; } => return Ok(()),
            }
        }
    }
}

fn reader_ready(reader: &Store<Node>) -> bool {
    !reader.is_empty()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use net::overlay::Mac;
    use serde_json::json;

    #[test]
    fn annotations_are_patched_only_when_they_differ() {
        let vtep = Vtep {
            mac: Mac([2, 0, 0, 0, 0, 1]),
            mtu: 1450,
        };
        let want = annotations(&vtep, Ipv4Addr::new(192, 168, 1, 1));
        let bare: Node = serde_json::from_value(json!({"metadata": {"name": "a"}})).unwrap();
        let patch = annotation_patch(&bare, &want).unwrap();
        assert_eq!(
            patch["metadata"]["annotations"][overlay::MAC_ANNOTATION],
            "02:00:00:00:00:01"
        );
        assert_eq!(
            patch["metadata"]["annotations"][overlay::PUBLIC_IP_ANNOTATION],
            "192.168.1.1"
        );
        let done: Node = serde_json::from_value(
            json!({"metadata": {"name": "a", "annotations": patch["metadata"]["annotations"]}}),
        )
        .unwrap();
        assert_eq!(annotation_patch(&done, &want), None);
    }

    fn node(name: &str, cidr: &str, ip: &str, mac: &str) -> Arc<Node> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "annotations": {
                    overlay::MAC_ANNOTATION: mac,
                    overlay::PUBLIC_IP_ANNOTATION: ip,
                }},
                "spec": {"podCIDR": cidr},
            }))
            .unwrap(),
        )
    }

    #[tokio::test]
    async fn a_pass_routes_peers_and_sets_rules_once() {
        let fake = Arc::new(net::dataplane::FakeDataplane {
            mac: Mac([2, 0, 0, 0, 0, 1]),
            ..Default::default()
        });
        fake.local
            .lock()
            .unwrap()
            .insert(Ipv4Addr::new(192, 168, 1, 1));
        let o = Overlay {
            node: "a".into(),
            spec: vxlan_spec(Ipv4Addr::new(192, 168, 1, 1)),
            rules_id: "rkabc".into(),
            dataplane: fake.clone(),
        };
        let vtep = o.prepare().await.unwrap();
        // Never contacted: the node's annotations are already published.
        let client =
            kube::Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap()))
                .unwrap();
        let nodes = vec![
            node("a", "10.42.0.0/24", "192.168.1.1", "02:00:00:00:00:01"),
            node("b", "10.42.1.0/24", "192.168.1.2", "02:00:00:00:00:02"),
            // Same host as a (another agent in this network namespace): no overlay.
            node("c", "10.42.2.0/24", "192.168.1.1", "02:00:00:00:00:03"),
        ];
        let mut rules = None;
        o.reconcile(&client, &vtep, &nodes, &mut rules)
            .await
            .unwrap();
        let st = fake.state();
        let b = Subnet::parse("10.42.1.0/24").unwrap();
        assert_eq!(st.routes.keys().copied().collect::<Vec<_>>(), vec![b]);
        assert_eq!(
            st.fdb[&Mac([2, 0, 0, 0, 0, 2])],
            Ipv4Addr::new(192, 168, 1, 2)
        );
        assert!(st.addresses.contains(&Ipv4Addr::new(10, 42, 0, 0)));
        let set = fake.rules.lock().unwrap().clone().unwrap();
        assert_eq!(set.0, "rkabc");
        assert_eq!(set.2, vec![b]);

        // b leaves: its route goes, and the rules follow.
        o.reconcile(&client, &vtep, &nodes[..1], &mut rules)
            .await
            .unwrap();
        assert!(fake.state().routes.is_empty());
        assert!(fake.rules.lock().unwrap().clone().unwrap().2.is_empty());
    }
}
