/** Every question-type module, imported for its registration. */
import "./binary";
import "./categorical";
import "./multi-select";
import "./joint";
import "./numeric";
