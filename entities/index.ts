import { AccessReview, AccessReviewItem } from './access-review.js';
import { AgentVersion } from './agent-version.js';
import { AlertChannel, AlertChannelDelivery } from './alert-channel.js';
import { AlertEscalation, AlertPolicy } from './alert-policy.js';
import { Alert, AlertConditionState, AlertCorrelationGroup, AlertRule, AlertTemplate } from './alert.js';
import { ApiKey } from './api-key.js';
import { AuditLog } from './audit-log.js';
import { Automation, AutomationRun, AutomationRunResult } from './automation.js';
import { Device, DeviceInventory } from './device.js';
import { DeviceCommand } from './device-command.js';
import { DeviceGroup, DeviceGroupLog, DeviceGroupMember } from './device-group.js';
import { EnrollmentKey } from './enrollment-key.js';
import { MaintenanceOccurrence, MaintenanceWindow } from './maintenance.js';
import { Notification } from './notification.js';
import { Organization } from './organization.js';
import { OutboxEvent } from './outbox.js';
import { Partner } from './partner.js';
import { Role } from './role.js';
import { Script, ScriptCategory, ScriptExecution, ScriptTag, ScriptVersion } from './script.js';
import { LoginAttempt, RefreshToken } from './session.js';
import { Site } from './site.js';
import { SamlAssertion, SamlRequest, SsoExchangeCode, SsoIdentity, SsoProvider, SsoSession } from './sso.js';
import { Membership, User } from './user.js';
import { Webhook, WebhookDelivery } from './webhook.js';

/** Every entity the ORM knows; a domain adds its classes here. */
export const entities = [OutboxEvent, AuditLog, Partner, Organization, Site, Role, User, Membership, ApiKey, RefreshToken, LoginAttempt, SsoProvider, SsoIdentity, SsoSession, SsoExchangeCode, SamlRequest, SamlAssertion, Webhook, WebhookDelivery, AccessReview, AccessReviewItem, Device, DeviceInventory, DeviceCommand, EnrollmentKey, DeviceGroup, DeviceGroupMember, DeviceGroupLog, AgentVersion, MaintenanceWindow, MaintenanceOccurrence, AlertRule, AlertTemplate, AlertCorrelationGroup, Alert, AlertConditionState, AlertChannel, AlertChannelDelivery, AlertPolicy, AlertEscalation, Notification, Script, ScriptVersion, ScriptExecution, ScriptCategory, ScriptTag, Automation, AutomationRun, AutomationRunResult];
