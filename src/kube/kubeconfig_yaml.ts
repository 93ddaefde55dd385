/**
 * Importing this module lets kubeconfig files be YAML (as kubectl writes them): it registers the
 * `yaml` parser with kubeconfig.ts. The CLI imports it when it meets a YAML kubeconfig; tools and
 * tests that read any kubeconfig import it up front.
 */
import { parse } from "yaml";
import { useYamlParser } from "./kubeconfig.ts";

useYamlParser(parse);
