/** The participant page's entry point: registrations, the test hook, then the app. */
import "./mechanisms/all";
import "./questions/all";
import { start } from "./app/routes";
import { installHook } from "./hook";

installHook();
start();
