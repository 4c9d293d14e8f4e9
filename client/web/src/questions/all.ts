/** Every question-type module, imported for its registration. */
import "./numeric";
