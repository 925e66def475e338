//! Printers of the volume kinds: PersistentVolume, PersistentVolumeClaim, StorageClass and the
//! CSI kinds (kube's `printPersistentVolume`, `printStorageClass`, `printCSIDriver`, ...).

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{AGE, NAME, StaticPrinter, age, arr, at, boolean, name, s};
use apimachinery::table::{Column, Row};

pub(super) const PV_COLUMNS: &[Column] = &[
    NAME,
    Column {
        name: "Capacity",
        kind: "string",
        format: "",
        description: "capacity is the description of the persistent volume's resources and capacity. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity",
        priority: 0,
    },
    Column {
        name: "Access Modes",
        kind: "string",
        format: "",
        description: "accessModes contains all ways the volume can be mounted. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes",
        priority: 0,
    },
    Column {
        name: "Reclaim Policy",
        kind: "string",
        format: "",
        description: "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim. Valid options are Retain (default for manually created PersistentVolumes), Delete (default for dynamically provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the volume plugin underlying this PersistentVolume. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming",
        priority: 0,
    },
    Column {
        name: "Status",
        kind: "string",
        format: "",
        description: "phase indicates if a volume is available, bound to a claim, or released by a claim. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase",
        priority: 0,
    },
    Column {
        name: "Claim",
        kind: "string",
        format: "",
        description: "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is the authoritative bind between PV and PVC. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding",
        priority: 0,
    },
    Column { name: "StorageClass", kind: "string", format: "", description: "StorageClass of the pv", priority: 0 },
    Column {
        name: "VolumeAttributesClass",
        kind: "string",
        format: "",
        description: "VolumeAttributesClass of the pv",
        priority: 0,
    },
    Column {
        name: "Reason",
        kind: "string",
        format: "",
        description: "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.",
        priority: 0,
    },
    AGE,
    Column {
        name: "VolumeMode",
        kind: "string",
        format: "",
        description: "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state. Value of Filesystem is implied when not included in spec.",
        priority: 1,
    },
];

pub(super) const PVC_COLUMNS: &[Column] = &[
    NAME,
    Column {
        name: "Status",
        kind: "string",
        format: "",
        description: "phase represents the current phase of PersistentVolumeClaim.",
        priority: 0,
    },
    Column {
        name: "Volume",
        kind: "string",
        format: "",
        description: "volumeName is the binding reference to the PersistentVolume backing this claim.",
        priority: 0,
    },
    Column {
        name: "Capacity",
        kind: "string",
        format: "",
        description: "capacity represents the actual resources of the underlying volume.",
        priority: 0,
    },
    Column {
        name: "Access Modes",
        kind: "string",
        format: "",
        description: "accessModes contains the actual access modes the volume backing the PVC has. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1",
        priority: 0,
    },
    Column { name: "StorageClass", kind: "string", format: "", description: "StorageClass of the pvc", priority: 0 },
    Column {
        name: "VolumeAttributesClass",
        kind: "string",
        format: "",
        description: "VolumeAttributesClass of the pvc",
        priority: 0,
    },
    AGE,
    Column {
        name: "VolumeMode",
        kind: "string",
        format: "",
        description: "volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in claim spec.",
        priority: 1,
    },
];

pub(super) const STORAGE_CLASS_COLUMNS: &[Column] = &[
    NAME,
    Column {
        name: "Provisioner",
        kind: "string",
        format: "",
        description: "provisioner indicates the type of the provisioner.",
        priority: 0,
    },
    Column {
        name: "ReclaimPolicy",
        kind: "string",
        format: "",
        description: "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. Defaults to Delete.",
        priority: 0,
    },
    Column {
        name: "VolumeBindingMode",
        kind: "string",
        format: "",
        description: "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling feature.",
        priority: 0,
    },
    Column {
        name: "AllowVolumeExpansion",
        kind: "string",
        format: "",
        description: "allowVolumeExpansion shows whether the storage class allow volume expand.",
        priority: 0,
    },
    AGE,
];

pub(super) const CSI_DRIVER_COLUMNS: &[Column] = &[
    NAME,
    Column {
        name: "AttachRequired",
        kind: "boolean",
        format: "",
        description: "attachRequired indicates this CSI volume driver requires an attach operation (because it implements the CSI ControllerPublishVolume() method), and that the Kubernetes attach detach controller should call the attach volume interface which checks the volumeattachment status and waits until the volume is attached before proceeding to mounting. The CSI external-attacher coordinates with CSI volume driver and updates the volumeattachment status when the attach operation is complete. If the CSIDriverRegistry feature gate is enabled and the value is specified to false, the attach operation will be skipped. Otherwise the attach operation will be called.\n\nThis field is immutable.",
        priority: 0,
    },
    Column {
        name: "PodInfoOnMount",
        kind: "boolean",
        format: "",
        description: "podInfoOnMount indicates this CSI volume driver requires additional pod information (like podName, podUID, etc.) during mount operations, if set to true. If set to false, pod information will not be passed on mount. Default is false.\n\nThe CSI driver specifies podInfoOnMount as part of driver deployment. If true, Kubelet will pass pod information as VolumeContext in the CSI NodePublishVolume() calls. The CSI driver is responsible for parsing and validating the information passed in as VolumeContext.\n\nThe following VolumeContext will be passed if podInfoOnMount is set to true. This list might grow, but the prefix will be used. \"csi.storage.k8s.io/pod.name\": pod.Name \"csi.storage.k8s.io/pod.namespace\": pod.Namespace \"csi.storage.k8s.io/pod.uid\": string(pod.UID) \"csi.storage.k8s.io/ephemeral\": \"true\" if the volume is an ephemeral inline volume\n                                defined by a CSIVolumeSource, otherwise \"false\"\n\n\"csi.storage.k8s.io/ephemeral\" is a new feature in Kubernetes 1.16. It is only required for drivers which support both the \"Persistent\" and \"Ephemeral\" VolumeLifecycleMode. Other drivers can leave pod info disabled and/or ignore this field. As Kubernetes 1.15 doesn't support this field, drivers can only support one mode when deployed on such a cluster and the deployment determines which mode that is, for example via a command line parameter of the driver.\n\nThis field was immutable in Kubernetes < 1.29 and now is mutable.",
        priority: 0,
    },
    Column {
        name: "StorageCapacity",
        kind: "boolean",
        format: "",
        description: "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity that the driver deployment will report by creating CSIStorageCapacity objects with capacity information, if set to true.\n\nThe check can be enabled immediately when deploying a driver. In that case, provisioning new volumes with late binding will pause until the driver deployment has published some suitable CSIStorageCapacity object.\n\nAlternatively, the driver can be deployed with the field unset or false and it can be flipped later when storage capacity information has been published.\n\nThis field was immutable in Kubernetes <= 1.22 and now is mutable.",
        priority: 0,
    },
    Column {
        name: "TokenRequests",
        kind: "string",
        format: "",
        description: "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do necessary authentication. Kubelet will pass the tokens in VolumeContext in the CSI NodePublishVolume calls. The CSI driver should parse and validate the following VolumeContext: \"csi.storage.k8s.io/serviceAccount.tokens\": {\n  \"<audience>\": {\n    \"token\": <token>,\n    \"expirationTimestamp\": <expiration timestamp in RFC3339>,\n  },\n  ...\n}\n\nNote: Audience in each TokenRequest should be different and at most one token is empty string. To receive a new token after expiry, RequiresRepublish can be used to trigger NodePublishVolume periodically.",
        priority: 0,
    },
    Column {
        name: "RequiresRepublish",
        kind: "boolean",
        format: "",
        description: "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect any possible change in the mounted volume. This field defaults to false.\n\nNote: After a successful initial NodePublishVolume call, subsequent calls to NodePublishVolume should only update the contents of the volume. New mount points will not be seen by a running container.",
        priority: 0,
    },
    Column {
        name: "Modes",
        kind: "string",
        format: "",
        description: "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports. The default if the list is empty is \"Persistent\", which is the usage defined by the CSI specification and implemented in Kubernetes via the usual PV/PVC mechanism.\n\nThe other mode is \"Ephemeral\". In this mode, volumes are defined inline inside the pod spec with CSIVolumeSource and their lifecycle is tied to the lifecycle of that pod. A driver has to be aware of this because it is only going to get a NodePublishVolume call for such a volume.\n\nFor more information about implementing this mode, see https://kubernetes-csi.github.io/docs/ephemeral-local-volumes.html A driver can support one or more of these modes and more modes may be added in the future.\n\nThis field is beta. This field is immutable.",
        priority: 0,
    },
    AGE,
];

pub(super) const CSI_NODE_COLUMNS: &[Column] = &[
    NAME,
    Column {
        name: "Drivers",
        kind: "integer",
        format: "",
        description: "Drivers indicates the number of CSI drivers registered on the node",
        priority: 0,
    },
    AGE,
];

pub(super) const CSI_STORAGE_CAPACITY_COLUMNS: &[Column] = &[
    NAME,
    Column {
        name: "StorageClassName",
        kind: "string",
        format: "",
        description: "storageClassName represents the name of the StorageClass that the reported capacity applies to. It must meet the same requirements as the name of a StorageClass object (non-empty, DNS subdomain). If that object no longer exists, the CSIStorageCapacity object is obsolete and should be removed by its creator. This field is immutable.",
        priority: 0,
    },
    Column {
        name: "Capacity",
        kind: "string",
        format: "",
        description: "capacity is the value reported by the CSI driver in its GetCapacityResponse for a GetCapacityRequest with topology and parameters that match the previous fields.\n\nThe semantic is currently (CSI spec 1.2) defined as: The available capacity, in bytes, of the storage that can be used to provision volumes. If not set, that information is currently unavailable.",
        priority: 0,
    },
];

pub(super) const VOLUME_ATTACHMENT_COLUMNS: &[Column] = &[
    NAME,
    Column {
        name: "Attacher",
        kind: "string",
        format: "name",
        description: "attacher indicates the name of the volume driver that MUST handle this request. This is the name returned by GetPluginName().",
        priority: 0,
    },
    Column {
        name: "PV",
        kind: "string",
        format: "",
        description: "persistentVolumeName represents the name of the persistent volume to attach.",
        priority: 0,
    },
    Column {
        name: "Node",
        kind: "string",
        format: "",
        description: "nodeName represents the node that the volume should be attached to.",
        priority: 0,
    },
    Column {
        name: "Attached",
        kind: "boolean",
        format: "",
        description: "attached indicates the volume is successfully attached. This field must only be set by the entity completing the attach operation, i.e. the external-attacher.",
        priority: 0,
    },
    AGE,
];

/// `GetAccessModesAsString`: the short forms, in kube's fixed order, each once.
fn access_modes(modes: &[Value]) -> String {
    let has = |m: &str| modes.iter().any(|v| v.as_str() == Some(m));
    let short =
        [("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP")];
    short.iter().filter(|(m, _)| has(m)).map(|(_, s)| *s).collect::<Vec<_>>().join(",")
}

/// `Quantity.String()` of a quantity field; a missing one is the zero quantity.
pub(super) fn quantity(v: &Value, path: &str) -> String {
    at(v, path).and_then(|q| kube_cel::quantity::from_json(q).ok()).map_or_else(|| "0".to_string(), |q| q.canonical())
}

/// The beta storage-class annotation wins over the field when present, even empty.
fn storage_class(obj: &Value) -> String {
    match obj.pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class").and_then(Value::as_str) {
        Some(a) => a.to_string(),
        None => s(obj, "spec.storageClassName").to_string(),
    }
}

fn phase(obj: &Value) -> &str {
    if at(obj, "metadata.deletionTimestamp").is_some() { "Terminating" } else { s(obj, "status.phase") }
}

fn unset_or(obj: &Value, path: &str) -> Value {
    at(obj, path).and_then(Value::as_str).unwrap_or("<unset>").into()
}

/// `printPersistentVolume`.
pub static PERSISTENT_VOLUMES: StaticPrinter = StaticPrinter { columns: PV_COLUMNS, row: pv_row };

fn pv_row(obj: &Value, now: DateTime<Utc>) -> Row {
    let claim = match at(obj, "spec.claimRef") {
        Some(_) => format!("{}/{}", s(obj, "spec.claimRef.namespace"), s(obj, "spec.claimRef.name")),
        None => String::new(),
    };
    Row::cells(vec![
        name(obj),
        quantity(obj, "spec.capacity.storage").into(),
        access_modes(arr(obj, "spec.accessModes")).into(),
        s(obj, "spec.persistentVolumeReclaimPolicy").into(),
        phase(obj).into(),
        claim.into(),
        storage_class(obj).into(),
        unset_or(obj, "spec.volumeAttributesClassName"),
        s(obj, "status.reason").into(),
        age(obj, now),
        unset_or(obj, "spec.volumeMode"),
    ])
}

/// `printPersistentVolumeClaim`: capacity and modes only once bound.
pub static PERSISTENT_VOLUME_CLAIMS: StaticPrinter = StaticPrinter { columns: PVC_COLUMNS, row: pvc_row };

fn pvc_row(obj: &Value, now: DateTime<Utc>) -> Row {
    let bound = !s(obj, "spec.volumeName").is_empty();
    let (capacity, modes) = if bound {
        (quantity(obj, "status.capacity.storage"), access_modes(arr(obj, "status.accessModes")))
    } else {
        (String::new(), String::new())
    };
    Row::cells(vec![
        name(obj),
        phase(obj).into(),
        s(obj, "spec.volumeName").into(),
        capacity.into(),
        modes.into(),
        storage_class(obj).into(),
        unset_or(obj, "spec.volumeAttributesClassName"),
        age(obj, now),
        unset_or(obj, "spec.volumeMode"),
    ])
}

/// `printStorageClass`: the default class says so in its name.
pub static STORAGE_CLASSES: StaticPrinter = StaticPrinter { columns: STORAGE_CLASS_COLUMNS, row: storage_class_row };

fn storage_class_row(obj: &Value, now: DateTime<Utc>) -> Row {
    let default = ["storageclass.kubernetes.io~1is-default-class", "storageclass.beta.kubernetes.io~1is-default-class"]
        .iter()
        .any(|k| obj.pointer(&format!("/metadata/annotations/{k}")).and_then(Value::as_str) == Some("true"));
    let mut n = s(obj, "metadata.name").to_string();
    if default {
        n.push_str(" (default)");
    }
    Row::cells(vec![
        n.into(),
        s(obj, "provisioner").into(),
        super::or(s(obj, "reclaimPolicy"), "Delete").into(),
        super::or(s(obj, "volumeBindingMode"), "Immediate").into(),
        boolean(obj, "allowVolumeExpansion").into(),
        age(obj, now),
    ])
}

/// `printCSIDriver`.
pub static CSI_DRIVERS: StaticPrinter = StaticPrinter { columns: CSI_DRIVER_COLUMNS, row: csi_driver_row };

fn csi_driver_row(obj: &Value, now: DateTime<Utc>) -> Row {
    let tokens = match at(obj, "spec.tokenRequests").and_then(Value::as_array) {
        Some(t) => t.iter().map(|t| t["audience"].as_str().unwrap_or("").to_string()).collect::<Vec<_>>().join(","),
        None => "<unset>".to_string(),
    };
    let modes: Vec<&str> = arr(obj, "spec.volumeLifecycleModes").iter().filter_map(Value::as_str).collect();
    let modes = if modes.is_empty() { "<none>".to_string() } else { modes.join(",") };
    Row::cells(vec![
        name(obj),
        at(obj, "spec.attachRequired").and_then(Value::as_bool).unwrap_or(true).into(),
        boolean(obj, "spec.podInfoOnMount").into(),
        boolean(obj, "spec.storageCapacity").into(),
        tokens.into(),
        boolean(obj, "spec.requiresRepublish").into(),
        modes.into(),
        age(obj, now),
    ])
}

/// `printCSINode`: how many drivers registered.
pub static CSI_NODES: StaticPrinter = StaticPrinter {
    columns: CSI_NODE_COLUMNS,
    row: |obj, now| Row::cells(vec![name(obj), (arr(obj, "spec.drivers").len() as i64).into(), age(obj, now)]),
};

/// `printCSIStorageCapacity`: no age column.
pub static CSI_STORAGE_CAPACITIES: StaticPrinter = StaticPrinter {
    columns: CSI_STORAGE_CAPACITY_COLUMNS,
    row: |obj, _| {
        let capacity = if at(obj, "capacity").is_some() { quantity(obj, "capacity") } else { "<unset>".to_string() };
        Row::cells(vec![name(obj), s(obj, "storageClassName").into(), capacity.into()])
    },
};

/// `printVolumeAttachment`.
pub static VOLUME_ATTACHMENTS: StaticPrinter = StaticPrinter {
    columns: VOLUME_ATTACHMENT_COLUMNS,
    row: |obj, now| {
        Row::cells(vec![
            name(obj),
            s(obj, "spec.attacher").into(),
            s(obj, "spec.source.persistentVolumeName").into(),
            s(obj, "spec.nodeName").into(),
            boolean(obj, "status.attached").into(),
            age(obj, now),
        ])
    },
};
