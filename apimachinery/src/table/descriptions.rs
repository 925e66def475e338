//! Column descriptions kube-apiserver v1.30 puts in `columnDefinitions[].description`: the
//! `SwaggerDoc()` strings of the API types its printers reference (some from API versions no
//! longer served, such as `extensions/v1beta1`, exactly as `pkg/printers/internalversion` does),
//! extracted from `k8s.io/api` and `k8s.io/apimachinery` at release-1.30. Clients only show
//! them in `kubectl get -o json --server-print`, but byte-exact Tables are cheaper to test.

/// `SwaggerDoc()` of `meta.ObjectMeta.name`.
pub const NAME: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
/// `SwaggerDoc()` of `meta.ObjectMeta.creationTimestamp`.
pub const CREATION_TIMESTAMP: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
/// `SwaggerDoc()` of `core.PodStatus.podIP`.
pub const POD_IP: &str =
    "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.";
/// `SwaggerDoc()` of `core.PodSpec.nodeName`.
pub const POD_NODE_NAME: &str = "NodeName is a request to schedule this pod onto a specific node. If it is non-empty, the scheduler simply schedules this pod onto that node, assuming that it fits resource requirements.";
/// `SwaggerDoc()` of `core.PodStatus.nominatedNodeName`.
pub const POD_NOMINATED_NODE: &str = "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.";
/// `SwaggerDoc()` of `core.PodSpec.readinessGates`.
pub const POD_READINESS_GATES: &str = "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates";
/// `SwaggerDoc()` of `ext.ReplicaSetSpec.replicas`.
pub const RS_SPEC_REPLICAS: &str = "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/#what-is-a-replicationcontroller";
/// `SwaggerDoc()` of `ext.ReplicaSetStatus.replicas`.
pub const RS_STATUS_REPLICAS: &str = "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/#what-is-a-replicationcontroller";
/// `SwaggerDoc()` of `ext.ReplicaSetStatus.readyReplicas`.
pub const RS_READY_REPLICAS: &str = "The number of ready replicas for this replica set.";
/// `SwaggerDoc()` of `ext.ReplicaSetSpec.selector`.
pub const RS_SELECTOR: &str = "Selector is a label query over pods that should match the replica count. If the selector is empty, it is defaulted to the labels present on the pod template. Label keys and values that must match in order to be controlled by this replica set. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";
/// `SwaggerDoc()` of `ext.DaemonSetStatus.desiredNumberScheduled`.
pub const DS_DESIRED: &str = "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/";
/// `SwaggerDoc()` of `ext.DaemonSetStatus.currentNumberScheduled`.
pub const DS_CURRENT: &str = "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/";
/// `SwaggerDoc()` of `ext.DaemonSetStatus.numberReady`.
pub const DS_READY: &str = "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.";
/// `SwaggerDoc()` of `ext.DaemonSetStatus.updatedNumberScheduled`.
pub const DS_UPDATED: &str = "The total number of nodes that are running updated daemon pod";
/// `SwaggerDoc()` of `ext.DaemonSetStatus.numberAvailable`.
pub const DS_AVAILABLE: &str = "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)";
/// `SwaggerDoc()` of `core.PodSpec.nodeSelector`.
pub const POD_NODE_SELECTOR: &str = "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/";
/// `SwaggerDoc()` of `ext.DaemonSetSpec.selector`.
pub const DS_SELECTOR: &str = "A label query over pods that are managed by the daemon set. Must match in order to be controlled. If empty, defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";
/// `SwaggerDoc()` of `batch.JobStatus.succeeded`.
pub const JOB_SUCCEEDED: &str = "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs.";
/// `SwaggerDoc()` of `batch.JobSpec.selector`.
pub const JOB_SELECTOR: &str = "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";
/// `SwaggerDoc()` of `batchb.CronJobSpec.schedule`.
pub const CJ_SCHEDULE: &str = "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.";
/// `SwaggerDoc()` of `batchb.CronJobSpec.timeZone`.
pub const CJ_TIMEZONE: &str = "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this will default to the time zone of the kube-controller-manager process. The set of valid time zone names and the time zone offset is loaded from the system-wide time zone database by the API server during CronJob validation and the controller manager during execution. If no system-wide time zone database can be found a bundled version of the database is used instead. If the time zone name becomes invalid during the lifetime of a CronJob or due to a change in host configuration, the controller will stop creating new new Jobs and will create a system event with the reason UnknownTimeZone. More information can be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones";
/// `SwaggerDoc()` of `batchb.CronJobSpec.suspend`.
pub const CJ_SUSPEND: &str = "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  Defaults to false.";
/// `SwaggerDoc()` of `batchb.CronJobStatus.active`.
pub const CJ_ACTIVE: &str = "A list of pointers to currently running jobs.";
/// `SwaggerDoc()` of `batchb.CronJobStatus.lastScheduleTime`.
pub const CJ_LAST_SCHEDULE: &str = "Information when was the last time the job was successfully scheduled.";
/// `SwaggerDoc()` of `core.ServiceSpec.type`.
pub const SVC_TYPE: &str = "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types";
/// `SwaggerDoc()` of `core.ServiceSpec.clusterIP`.
pub const SVC_CLUSTER_IP: &str = "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies";
/// `SwaggerDoc()` of `core.ServiceSpec.externalIPs`.
pub const SVC_EXTERNAL_IPS: &str = "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system.";
/// `SwaggerDoc()` of `core.ServiceSpec.ports`.
pub const SVC_PORTS: &str = "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies";
/// `SwaggerDoc()` of `core.ServiceSpec.selector`.
pub const SVC_SELECTOR: &str = "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/";
/// `SwaggerDoc()` of `core.Endpoints.subsets`.
pub const EP_SUBSETS: &str = "The set of all endpoints is the union of all subsets. Addresses are placed into subsets according to the IPs they share. A single address with multiple ports, some of which are ready and some of which are not (because they come from different containers) will result in the address being displayed in different subsets for the different ports. No address will appear in both Addresses and NotReadyAddresses in the same subset. Sets of addresses and ports that comprise a service.";
/// `SwaggerDoc()` of `core.NodeSystemInfo.kubeletVersion`.
pub const NODE_KUBELET_VERSION: &str = "Kubelet Version reported by the node.";
/// `SwaggerDoc()` of `core.NodeStatus.addresses`.
pub const NODE_ADDRESSES: &str = "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/concepts/nodes/node/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).";
/// `SwaggerDoc()` of `core.NodeSystemInfo.osImage`.
pub const NODE_OS_IMAGE: &str =
    "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).";
/// `SwaggerDoc()` of `core.NodeSystemInfo.kernelVersion`.
pub const NODE_KERNEL_VERSION: &str =
    "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).";
/// `SwaggerDoc()` of `core.NodeSystemInfo.containerRuntimeVersion`.
pub const NODE_CONTAINER_RUNTIME: &str =
    "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).";
/// `SwaggerDoc()` of `core.Event.lastTimestamp`.
pub const EV_LAST_TIMESTAMP: &str = "The time at which the most recent occurrence of this event was recorded.";
/// `SwaggerDoc()` of `core.Event.type`.
pub const EV_TYPE: &str = "Type of this event (Normal, Warning), new types could be added in the future";
/// `SwaggerDoc()` of `core.Event.reason`.
pub const EV_REASON: &str = "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.";
/// `SwaggerDoc()` of `core.Event.involvedObject`.
pub const EV_INVOLVED_OBJECT: &str = "The object that this event is about.";
/// `SwaggerDoc()` of `core.ObjectReference.fieldPath`.
pub const OBJREF_FIELD_PATH: &str = "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.";
/// `SwaggerDoc()` of `core.Event.source`.
pub const EV_SOURCE: &str = "The component reporting this event. Should be a short machine understandable string.";
/// `SwaggerDoc()` of `core.Event.message`.
pub const EV_MESSAGE: &str = "A human-readable description of the status of this operation.";
/// `SwaggerDoc()` of `core.Event.firstTimestamp`.
pub const EV_FIRST_TIMESTAMP: &str =
    "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)";
/// `SwaggerDoc()` of `core.Event.count`.
pub const EV_COUNT: &str = "The number of times this event has occurred.";
/// `SwaggerDoc()` of `core.Secret.type`.
pub const SECRET_TYPE: &str = "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types";
/// `SwaggerDoc()` of `core.Secret.data`.
pub const SECRET_DATA: &str = "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4";
/// `SwaggerDoc()` of `core.ServiceAccount.secrets`.
pub const SA_SECRETS: &str = "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use. Pods are only limited to this list if this service account has a \"kubernetes.io/enforce-mountable-secrets\" annotation set to \"true\". This field should not be used to find auto-generated service account token secrets for use outside of pods. Instead, tokens can be requested directly using the TokenRequest API, or service account token secrets can be manually created. More info: https://kubernetes.io/docs/concepts/configuration/secret";
/// `SwaggerDoc()` of `core.ConfigMap.data`.
pub const CM_DATA: &str = "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.";
/// `SwaggerDoc()` of `ext.DeploymentStatus.updatedReplicas`.
pub const DEPLOY_UPDATED: &str =
    "Total number of non-terminated pods targeted by this deployment that have the desired template spec.";
/// `SwaggerDoc()` of `ext.DeploymentStatus.availableReplicas`.
pub const DEPLOY_AVAILABLE: &str =
    "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.";
/// `SwaggerDoc()` of `ext.DeploymentSpec.selector`.
pub const DEPLOY_SELECTOR: &str = "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.";
/// `SwaggerDoc()` of `rbacb.RoleBinding.roleRef`.
pub const RB_ROLE_REF: &str = "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.";
/// `SwaggerDoc()` of `rbacb.ClusterRoleBinding.roleRef`.
pub const CRB_ROLE_REF: &str = "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.";
/// `SwaggerDoc()` of `flowcontrolv1.PriorityLevelConfigurationReference.name`.
pub const FS_PRIORITY_LEVEL: &str = "`name` is the name of the priority level configuration being referenced Required.";
/// `SwaggerDoc()` of `flowcontrolv1.FlowSchemaSpec.matchingPrecedence`.
pub const FS_MATCHING_PRECEDENCE: &str = "`matchingPrecedence` is used to choose among the FlowSchemas that match a given request. The chosen FlowSchema is among those with the numerically lowest (which we take to be logically highest) MatchingPrecedence.  Each MatchingPrecedence value must be ranged in [1,10000]. Note that if the precedence is not specified, it will be set to 1000 as default.";
/// `SwaggerDoc()` of `flowcontrolv1.FlowSchemaSpec.distinguisherMethod`.
pub const FS_DISTINGUISHER_METHOD: &str = "`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema. `nil` specifies that the distinguisher is disabled and thus will always be the empty string.";
/// `SwaggerDoc()` of `flowcontrolv1.PriorityLevelConfigurationSpec.type`.
pub const PL_TYPE: &str = "`type` indicates whether this priority level is subject to limitation on request execution.  A value of `\"Exempt\"` means that requests of this priority level are not subject to a limit (and thus are never queued) and do not detract from the capacity made available to other priority levels.  A value of `\"Limited\"` means that (a) requests of this priority level _are_ subject to limits and (b) some of the server's limited capacity is made available exclusively to this priority level. Required.";
/// `SwaggerDoc()` of `flowcontrolv1.LimitedPriorityLevelConfiguration.nominalConcurrencyShares`.
pub const PL_NOMINAL_CONCURRENCY_SHARES: &str = "`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this level. This is the number of execution seats available at this priority level. This is used both for requests dispatched from this priority level as well as requests dispatched from other priority levels borrowing seats from this level. The server's concurrency limit (ServerCL) is divided among the Limited priority levels in proportion to their NCS values:\n\nNominalCL(i)  = ceil( ServerCL * NCS(i) / sum_ncs ) sum_ncs = sum[priority level k] NCS(k)\n\nBigger numbers mean a larger nominal concurrency limit, at the expense of every other priority level.\n\nIf not specified, this field defaults to a value of 30.\n\nSetting this field to zero supports the construction of a \"jail\" for this priority level that is used to hold some request(s)";
/// `SwaggerDoc()` of `flowcontrolv1.QueuingConfiguration.queues`.
pub const PL_QUEUES: &str = "`queues` is the number of queues for this priority level. The queues exist independently at each apiserver. The value must be positive.  Setting it to 1 effectively precludes shufflesharding and thus makes the distinguisher method of associated flow schemas irrelevant.  This field has a default value of 64.";
/// `SwaggerDoc()` of `flowcontrolv1.QueuingConfiguration.handSize`.
pub const PL_HAND_SIZE: &str = "`handSize` is a small positive number that configures the shuffle sharding of requests into queues.  When enqueuing a request at this priority level the request's flow identifier (a string pair) is hashed and the hash value is used to shuffle the list of queues and deal a hand of the size specified here.  The request is put into one of the shortest queues in that hand. `handSize` must be no larger than `queues`, and should be significantly smaller (so that a few heavy flows do not saturate most of the queues).  See the user-facing documentation for more extensive guidance on setting this field.  This field has a default value of 8.";
/// `SwaggerDoc()` of `flowcontrolv1.QueuingConfiguration.queueLengthLimit`.
pub const PL_QUEUE_LENGTH_LIMIT: &str = "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority level at a time; excess requests are rejected.  This value must be positive.  If not specified, it will be defaulted to 50.";
