package kuberun

import (
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Client is a clientset as kubectl finds its credentials: kubeconfig
// (else $KUBECONFIG, else ~/.kube/config, else a pod's service account),
// its context (else the current one), and that context's namespace
// ("default" when it names none).
func Client(kubeconfig, context string) (kubernetes.Interface, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		if _, err := os.Stat(kubeconfig); err != nil {
			return nil, "", fmt.Errorf("kubeconfig: %v", err)
		}
		rules.ExplicitPath = kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context})
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("the cluster's credentials (a kubeconfig, $KUBECONFIG, ~/.kube/config, or a pod's service account): %v", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, "", err
	}
	return cs, ns, nil
}
